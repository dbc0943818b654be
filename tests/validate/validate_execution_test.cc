// Executing schedules for real on the CPU backend, ranks as threads: the
// pipelined loss and every gradient equal an unpipelined run's (fp32,
// norm-wise relative error under 1e-5), for every schedule family; a
// stalled rank is named instead of waited on; results survive their trip
// to rank 0. Also what the GPU backend relies on without needing a GPU:
// every lowered schedule pairs each link's sends and receives in order (as
// NCCL, which has no tags, needs), tensor keys name their link, rank 0's
// broadcast reaches every rank, and a check's tolerance travels with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/model_config.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "step/stage_split.h"
#include "tests/support/sim_test_support.h"
#include "validate/comparison.h"
#include "validate/p2p_links.h"
#include "validate/rank_execution.h"
#include "validate/searched_order_share.h"
#include "validate/stage_runner.h"
#include "validate/thread_transport.h"

namespace pipeplan::validate {
namespace {

struct PipelineRun {
  models::ModelConfig model = models::load_model("tiny");
  models::TrainingShape shape;
  sim::Schedule lowered;
  step::StageSplit split{std::vector<int>{0, 1}};
};

PipelineRun make_run(const std::string& schedule, int ranks, int microbatches, int virtual_stages = 0) {
  PipelineRun setup;
  setup.shape.micro_batch_size = 2;
  setup.shape.seq_len = 16;
  const sim::Schedule generated = sim::generate_schedule(schedule, {ranks, microbatches, virtual_stages, 0});
  setup.shape.micro_batch_size *= static_cast<int>(generated.microbatch_scale);
  setup.lowered = sim::lower_communication(generated, sim::RecvPlacement::kBeforeUse);
  // tiny has 4 blocks: one per stage at 4 stages, two at 2.
  setup.split = step::even_split(setup.model.layers, generated.stages);
  return setup;
}

std::vector<RankResult> run_ranks(const PipelineRun& setup, const ExecutionSettings& settings, double timeout_s = 30) {
  std::vector<RankResult> results(static_cast<std::size_t>(setup.lowered.ranks));
  ThreadGroup::run(setup.lowered.ranks, timeout_s, [&](Transport& transport) {
    results[static_cast<std::size_t>(transport.rank())] =
        execute_rank(setup.model, setup.shape, setup.lowered, setup.split, transport, settings);
  });
  return results;
}

struct Case {
  const char* schedule;
  int ranks;
  int microbatches;
  int virtual_stages;
};

class PipelinedGradients : public ::testing::TestWithParam<Case> {};

TEST_P(PipelinedGradients, MatchTheUnpipelinedReference) {
  const Case c = GetParam();
  const PipelineRun setup = make_run(c.schedule, c.ranks, c.microbatches, c.virtual_stages);
  ExecutionSettings settings;
  settings.check_gradients = true;
  settings.warmup = 0;
  settings.iterations = 1;
  const std::vector<RankResult> results = run_ranks(setup, settings);
  int compared = 0, loss_holders = 0;
  for (const RankResult& rank : results) {
    ASSERT_TRUE(rank.gradients.has_value());
    EXPECT_EQ(rank.gradients->tolerance, kGradientTolerance);
    EXPECT_LT(rank.gradients->max_relative_error, kGradientTolerance)
        << c.schedule << " rank " << rank.rank << " worst " << rank.gradients->worst_parameter;
    compared += rank.gradients->parameters;
    if (rank.holds_loss) {
      ++loss_holders;
      EXPECT_NEAR(rank.loss, rank.reference_loss, kGradientTolerance * std::abs(rank.reference_loss));
      // Cross-entropy of near-uniform predictions over 512 tokens: about ln 512.
      EXPECT_NEAR(rank.loss, std::log(512.0), 1.0);
    }
    // Every compute action of the rank ran exactly once per iteration.
    std::size_t computes = 0;
    for (const RunRecord& record : rank.iterations.front()) computes += sim::is_compute(record.action.kind);
    std::size_t expected = 0;
    for (const sim::Action& action : setup.lowered.actions[static_cast<std::size_t>(rank.rank)]) {
      expected += sim::is_compute(action.kind);
    }
    EXPECT_EQ(computes, expected);
  }
  EXPECT_EQ(loss_holders, 1);
  // Each block has 6 parameter tensors or more; the edges at least one each.
  EXPECT_GE(compared, 4 * 6 + 2);
}

INSTANTIATE_TEST_SUITE_P(
    EverySchedule, PipelinedGradients,
    ::testing::Values(Case{"GPipe", 2, 4, 0}, Case{"1F1B", 2, 4, 0}, Case{"1F1B", 4, 6, 0}, Case{"ZBH1", 2, 4, 0},
                      Case{"ZBH2", 2, 4, 0}, Case{"Interleaved1F1B", 2, 4, 2}, Case{"InterleavedZeroBubble", 2, 4, 2},
                      Case{"LoopedBFS", 2, 4, 2}, Case{"ZBV", 2, 4, 0}, Case{"DualPipeV", 2, 4, 0},
                      Case{"Naive", 2, 3, 0}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.schedule) + "_p" + std::to_string(info.param.ranks) + "_m" +
             std::to_string(info.param.microbatches);
    });

TEST(RankExecution, ActivationsHeldFollowTheSchedule) {
  // 1F1B on 2 ranks holds at most p = 2 micro-batches on rank 0 and GPipe
  // all m = 4: rank 0's peak under GPipe is twice 1F1B's (same layers).
  ExecutionSettings settings;
  settings.iterations = 1;
  settings.warmup = 0;
  const std::vector<RankResult> gpipe = run_ranks(make_run("GPipe", 2, 4), settings);
  const std::vector<RankResult> one_f_one_b = run_ranks(make_run("1F1B", 2, 4), settings);
  const double ratio = static_cast<double>(gpipe[0].peak_held_bytes) / one_f_one_b[0].peak_held_bytes;
  EXPECT_NEAR(ratio, 2.0, 0.05);
}

TEST(RankExecution, AStalledRankIsNamedNotWaitedOn) {
  const PipelineRun setup = make_run("1F1B", 2, 2);
  ExecutionSettings settings;
  settings.iterations = 1;
  settings.warmup = 0;
  settings.stall_rank = 1;
  settings.stall_s = 1.0;
  try {
    run_ranks(setup, settings, 0.2);
    FAIL() << "the stall went unnoticed";
  } catch (const RankFailure& failure) {
    EXPECT_EQ(failure.failed_rank(), 1) << failure.what();
    EXPECT_NE(std::string(failure.what()).find("rank 1"), std::string::npos) << failure.what();
  }
}

TEST(RankExecution, ResultsSurviveThePackedTrip) {
  RankResult result;
  result.rank = 3;
  result.parameter_bytes = 123456789012;
  result.peak_held_bytes = 42;
  result.peak_heap_bytes = 4242;
  result.holds_loss = true;
  result.loss = 6.25;
  result.reference_loss = 6.2500001;
  result.gradients = GradientCheck{17, 3.5e-7, "layer 2 attention.qkv.weight", 2};
  result.iterations = {{{{1, 2, sim::OpKind::kBackwardInput, false}, 0.5, 0.75},
                        {{1, 3, sim::OpKind::kForward, true}, 0.75, 1.25}},
                       {}};
  const RankResult back = unpack_result(pack_result(result));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.parameter_bytes, result.parameter_bytes);
  EXPECT_EQ(back.peak_held_bytes, 42);
  EXPECT_EQ(back.peak_heap_bytes, 4242);
  EXPECT_TRUE(back.holds_loss);
  EXPECT_EQ(back.loss, 6.25);
  EXPECT_EQ(back.reference_loss, result.reference_loss);
  ASSERT_TRUE(back.gradients.has_value());
  EXPECT_EQ(back.gradients->worst_parameter, "layer 2 attention.qkv.weight");
  EXPECT_EQ(back.gradients->parameters, 17);
  ASSERT_EQ(back.iterations.size(), 2u);
  ASSERT_EQ(back.iterations[0].size(), 2u);
  EXPECT_EQ(back.iterations[0][1].action, result.iterations[0][1].action);
  EXPECT_EQ(back.iterations[0][0].end_s, 0.75);
  EXPECT_TRUE(back.iterations[1].empty());
  EXPECT_THROW(unpack_result({1, 2}), std::runtime_error);
}

// NCCL matches a communicator's sends and receives by order alone, so the
// GPU backend runs a schedule only when, on each link (stage boundary and
// direction), the sender's SENDs come in the receiver's RECV order. Every
// family, lowered, at every shape tried here does.
TEST(PointToPoint, EveryScheduleFamilyPairsItsLinksInOrder) {
  int checked = 0;
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    for (const int ranks : {2, 3, 4, 8}) {
      for (const int microbatches : {ranks, 2 * ranks, 3 * ranks + 1}) {
        for (const int virtual_stages : {0, 3}) {  // the family's default, and more chunks where it takes them
          sim::Schedule lowered;
          try {
            lowered =
                sim::lower_communication(sim::testing::family_schedule(family.name, {ranks, microbatches, virtual_stages, 0}), sim::RecvPlacement::kBeforeUse);
          } catch (const InputError&) {
            continue;  // a shape this family does not take
          }
          EXPECT_NO_THROW(check_p2p_order(lowered))
              << family.name << " p" << ranks << " m" << microbatches << " v" << virtual_stages;
          for (const P2pLink& link : p2p_links(lowered)) {
            EXPECT_EQ(static_cast<int>(link.sent.size()), lowered.microbatches) << link_name(link);
            EXPECT_NE(link.from_rank, link.to_rank) << link_name(link);
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 100);
}

TEST(PointToPoint, LinksAreEveryBoundaryAcrossRanksBothWays) {
  const sim::Schedule lowered = make_run("Interleaved1F1B", 2, 4, 2).lowered;  // stages 0..3 on ranks 0 1 0 1
  const std::vector<P2pLink> links = p2p_links(lowered);
  ASSERT_EQ(links.size(), 6u);  // 3 boundaries, 2 directions
  EXPECT_EQ(link_name(links.front()), "stage 0 -> stage 1 (activations)");
  EXPECT_EQ(link_name(links.back()), "stage 3 -> stage 2 (gradients)");
  EXPECT_EQ(links.back().from_rank, 1);
  EXPECT_EQ(links.back().to_rank, 0);
}

// Links are set up round by round; a round joins disjoint pairs of ranks,
// so its links proceed side by side (a chain of waits is one round long).
TEST(PointToPoint, SetupRoundsJoinDisjointPairsOfRanks) {
  for (const char* schedule : {"1F1B", "Interleaved1F1B", "ZBV"}) {
    const std::vector<P2pLink> links =
        p2p_links(sim::lower_communication(sim::generate_schedule(schedule, {4, 8, 0, 0}), sim::RecvPlacement::kBeforeUse));
    std::map<int, std::set<int>> busy;  // round -> ranks
    std::map<int, int> degree;          // rank -> links
    int last_round = 0;
    for (const P2pLink& link : links) {
      EXPECT_GE(link.round, last_round) << schedule << ": links come round by round";
      last_round = link.round;
      EXPECT_TRUE(busy[link.round].insert(link.from_rank).second) << schedule << " " << link_name(link);
      EXPECT_TRUE(busy[link.round].insert(link.to_rank).second) << schedule << " " << link_name(link);
      ++degree[link.from_rank];
      ++degree[link.to_rank];
    }
    int most = 0;
    for (const auto& [rank, count] : degree) most = std::max(most, count);
    EXPECT_LE(last_round + 1, 2 * most - 1) << schedule;  // what a greedy colouring needs at most
  }
  const std::vector<P2pLink> one_f_one_b = p2p_links(make_run("1F1B", 4, 8).lowered);
  EXPECT_EQ(link_name(one_f_one_b[0]), "stage 0 -> stage 1 (activations)");
  EXPECT_EQ(link_name(one_f_one_b[1]), "stage 2 -> stage 3 (activations)");  // beside it, in round 0
  EXPECT_EQ(one_f_one_b[1].round, 0);
}

TEST(PointToPoint, OutOfOrderReceivesAreRefusedNamingTheLink) {
  sim::Schedule lowered = make_run("1F1B", 2, 4).lowered;
  std::vector<sim::Action>& receiver = lowered.actions[1];
  const auto first = std::find_if(receiver.begin(), receiver.end(),
                                  [](const sim::Action& a) { return a.kind == sim::OpKind::kRecvForward; });
  const auto second = std::find_if(std::next(first), receiver.end(),
                                   [](const sim::Action& a) { return a.kind == sim::OpKind::kRecvForward; });
  ASSERT_NE(second, receiver.end());
  std::swap(first->microbatch, second->microbatch);
  try {
    check_p2p_order(lowered);
    FAIL() << "the reordering went unnoticed";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("stage 0 -> stage 1 (activations)"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0 sends micro-batches [0 1 2 3] but rank 1 receives [1 0 2 3]"), std::string::npos)
        << message;
  }
}

TEST(PointToPoint, TensorKeysNameTheirLink) {
  for (const int direction : {kForwardTensor, kBackwardTensor}) {
    const TensorId id = tensor_id(tensor_key(5, 3, direction, 7), 7);
    EXPECT_EQ(id.stage, 5);
    EXPECT_EQ(id.microbatch, 3);
    EXPECT_EQ(id.direction, direction);
  }
}

TEST(ThreadTransport, BroadcastGivesEveryRankRankZerosValues) {
  std::vector<std::vector<double>> received(3);
  ThreadGroup::run(3, 5, [&](Transport& transport) {
    const std::vector<double> mine{static_cast<double>(transport.rank()), 42};
    received[static_cast<std::size_t>(transport.rank())] = transport.broadcast(mine);
    EXPECT_EQ(transport.local_rank(), transport.rank());
  });
  for (const std::vector<double>& values : received) EXPECT_EQ(values, (std::vector<double>{0, 42}));
}

// A GPU run's check carries the bf16 bound; the comparison judges and
// reports it by that bound, not the CPU's.
TEST(GradientTolerance, TravelsWithTheCheck) {
  RankResult rank;
  rank.holds_loss = true;
  rank.loss = 6.25;
  rank.reference_loss = 6.26;  // 0.16% off
  rank.gradients = GradientCheck{27, 1.2e-2, "layer 0 embedding.weight", 0, kBf16GradientTolerance};
  rank.iterations = {{}};
  const RankResult back = unpack_result(pack_result(rank));
  ASSERT_TRUE(back.gradients.has_value());
  EXPECT_EQ(back.gradients->tolerance, kBf16GradientTolerance);

  Comparison comparison;
  comparison.gradients = back.gradients;
  comparison.loss_relative_error = std::abs(rank.loss - rank.reference_loss) / rank.reference_loss;
  EXPECT_TRUE(gradients_passed(comparison));
  const std::string json = comparison_json(comparison);
  EXPECT_NE(json.find("\"tolerance\": 0.03"), std::string::npos) << json;
  EXPECT_NE(json.find("\"passed\": true"), std::string::npos) << json;
  comparison.gradients->tolerance = kGradientTolerance;
  EXPECT_FALSE(gradients_passed(comparison));
  EXPECT_NE(comparison_summary(comparison).find("DIFFER"), std::string::npos);
}

// A searched order travels from rank 0 as doubles: every action, paired
// passes included, comes back as it went; values that do not fill the
// ranks are refused.
TEST(SearchedOrderShare, PackedOrdersUnpackAlike) {
  for (const char* name : {"ZBH1", "DualPipeV"}) {
    const sim::Schedule order = sim::generate_schedule(name, {4, 8, 0, 0});
    sim::Schedule shape = order;
    shape.actions.clear();
    const std::vector<double> values = pack_order(order);
    EXPECT_EQ(unpack_order(values, shape).actions, order.actions) << name;
    std::vector<double> short_values(values.begin(), values.end() - 1);
    EXPECT_THROW(unpack_order(short_values, shape), std::logic_error) << name;
    std::vector<double> long_values = values;
    long_values.push_back(0);
    EXPECT_THROW(unpack_order(long_values, shape), std::logic_error) << name;
  }
}

}  // namespace
}  // namespace pipeplan::validate
