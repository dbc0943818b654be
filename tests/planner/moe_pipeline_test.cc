// Mixtures of experts in the pipeline: the all-to-all a stage's passes
// carry is hidden where a schedule pairs passes (DualPipeV's overlapped
// F&B) and exposed where it does not (1F1B); bounds stay below replays
// with it; the search takes the expert axis and its plans say so.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/time_model.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/search/plan_search.h"
#include "sim/costs.h"
#include "sim/generators/registry.h"
#include "sim/output/chrome_trace.h"
#include "sim/pass_pairing.h"
#include "sim/simulate.h"
#include "sim/span_bound.h"
#include "step/layer_table.h"
#include "step/model_simulation.h"
#include "tests/support/megatron_flags.h"
#include "tests/support/cli_support.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan {
namespace {

// DeepSeek-V3 on p = 16 with ep = 64 over d = 64 (8 nodes: the all-to-all
// crosses the network), 32 micro-batches of one 4096-token sequence.
step::ModelSimulation deepseek_run(const std::string& schedule, const models::HardwareConfig& hardware,
                                   const sim::SimulationOptions& options = {}) {
  step::PipelineSetup setup;
  models::TrainingShape& shape = setup.shape;
  shape.seq_len = 4096;
  shape.dp = 64;
  shape.ep = 64;
  shape.zero = models::ZeroStage::kOptimizer;
  shape.pipelined = true;
  setup.pp = 16;
  setup.microbatches = 32;
  setup.schedule = schedule;
  // 61 blocks: 16 stages of 4 and 3 (1F1B), 32 of 2 and 1 (DualPipeV's V).
  std::vector<int> counts = schedule == "1F1B" ? std::vector<int>(16, 4) : std::vector<int>(32, 2);
  for (std::size_t k = 5; k < 8; ++k) counts[k] -= 1;
  setup.split = step::split_from_counts(counts, 61);
  const models::ModelConfig model = models::load_model("deepseek-v3");
  return step::simulate_model(models::expand_layers(model, shape), hardware, setup, options);
}

double busy_sum(const step::ModelSimulation& run) {
  double sum = 0;
  for (const sim::RankReport& rank : run.report.ranks_detail) sum += rank.busy_s;
  return sum;
}

double sum(const std::vector<double>& values) {
  double total = 0;
  for (double value : values) total += value;
  return total;
}

TEST(MoePipeline, DualPipeVHidesTheAllToAllThat1F1BExposes) {
  const models::HardwareConfig h100 = models::load_hardware("h100-sxm");
  const step::ModelSimulation one = deepseek_run("1F1B", h100);
  const step::ModelSimulation dual = deepseek_run("DualPipeV", h100);
  // 1F1B pairs nothing: every all-to-all is on the compute stream.
  EXPECT_EQ(sum(one.expert_comm_hidden_s), 0);
  EXPECT_GT(sum(one.expert_comm_s), 0);
  EXPECT_GT(sum(dual.expert_comm_hidden_s), 0);
  EXPECT_LT(dual.pipeline_s, one.pipeline_s);
  // The work is the same; DualPipeV's ranks are busy for less by exactly what its pairs hid, less
  // the compute the hidden kernels slow (its V's double messages share the port: set apart).
  const double kept = 1 - static_cast<double>(h100.gpu.collective_sms) / h100.gpu.sms;
  EXPECT_GT(sum(dual.port_shared_s), sum(one.port_shared_s));
  EXPECT_NEAR(busy_sum(one) - sum(one.port_shared_s) - (busy_sum(dual) - sum(dual.port_shared_s)),
              kept * sum(dual.expert_comm_hidden_s), 1e-6 * busy_sum(one));

  // With every link free the all-to-all costs nothing: the ranks' work is
  // equal and what is left between the two is the bubble.
  models::HardwareConfig free = h100;
  for (models::LinkSpec* link : {&free.node_link, &free.network}) *link = {1e30, 0, 1e30};
  const step::ModelSimulation one_free = deepseek_run("1F1B", free);
  const step::ModelSimulation dual_free = deepseek_run("DualPipeV", free);
  EXPECT_NEAR(sum(one_free.expert_comm_s) + sum(dual_free.expert_comm_hidden_s), 0, 1e-9);
  EXPECT_NEAR(busy_sum(one_free), busy_sum(dual_free), 1e-9 * busy_sum(one_free));
  const double gain = one.pipeline_s - dual.pipeline_s;
  const double gain_free = one_free.pipeline_s - dual_free.pipeline_s;
  EXPECT_LT(gain_free, gain);
  const auto idle = [](const step::ModelSimulation& run) {
    return run.pipeline_s - busy_sum(run) / static_cast<double>(run.report.ranks_detail.size());
  };
  EXPECT_NEAR(gain_free, idle(one_free) - idle(dual_free), 1e-9 * one_free.pipeline_s);
}

TEST(MoePipeline, TheTraceShowsTheAllToAllOnItsOwnTrack) {
  sim::SimulationOptions options;
  options.record_timeline = true;
  const step::ModelSimulation dual = deepseek_run("DualPipeV", models::load_hardware("h100-sxm"), options);
  const nlohmann::json trace = nlohmann::json::parse(sim::chrome_trace_json(dual.report));
  std::size_t tracks = 0, slices = 0;
  double hidden_us = 0, exposed_us = 0;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name" && event["args"]["name"] == "expert all-to-all") {
      EXPECT_EQ(event["tid"], sim::kExpertCommTid);
      ++tracks;
    }
    if (event["ph"] == "X" && event["cat"] == "expert-comm") {
      ++slices;
      hidden_us += event["args"]["hidden_us"].get<double>();
      exposed_us += event["args"]["exposed_us"].get<double>();
    }
  }
  EXPECT_EQ(tracks, 16u);  // every rank holds MoE layers
  EXPECT_GT(slices, 0u);
  // The slices carry the simulation's own account, to the trace's rounding.
  EXPECT_NEAR(hidden_us, sum(dual.expert_comm_hidden_s) * 1e6, 1e-3 * hidden_us);
  EXPECT_NEAR(exposed_us, sum(dual.expert_comm_s) * 1e6, 1e-3 * exposed_us + 1);
}

TEST(MoePipeline, SpanBoundsHoldWithCommunicationPairsHide) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> time(0.2, 2.0), share(0.0, 1.0);
  int checked = 0;
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    for (const auto& [p, m] : {std::pair{2, 6}, std::pair{4, 8}, std::pair{4, 16}}) {
      sim::Schedule plain;
      try {
        plain = sim::testing::family_schedule(family.name, {p, m, 0, 0});
      } catch (const InputError&) {
        continue;
      }
      sim::Schedule paired = plain;
      if (sim::pairs_forward_backward(family.name, plain.virtual_stages())) sim::pair_forward_backward(paired);
      for (int trial = 0; trial < 10; ++trial) {
        const sim::Schedule& schedule = trial % 2 == 0 ? plain : paired;
        sim::PipelineCosts costs;
        costs.hidden_comm_slowdown = 0.12;
        for (int stage = 0; stage < schedule.stages; ++stage) {
          sim::StageCost cost{time(random), time(random), time(random), 0, 0, 0, 0};
          cost.forward_comm_s = cost.forward_s * share(random);
          cost.backward_input_comm_s = cost.backward_input_s * share(random);
          costs.stages.push_back(cost);
        }
        costs.static_bytes.assign(static_cast<std::size_t>(schedule.ranks), 0);
        const sim::SimulationReport report = sim::simulate(schedule, costs, sim::Topology{});
        EXPECT_LE(sim::SpanBound(schedule).lower_bound_s(costs), report.cost_s * (1 + 1e-12)) << family.name;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(MoePipeline, APairTakesNoLessThanItsNetworkPortCarries) {
  // F: 2 ms of compute and a 10 ms all-to-all; B: 4 ms and 10 ms. Without
  // the SMs' slowdown each hides what the other's compute covers, 4 + 2 ms
  // of the 26: the pair takes 20 ms, the two all-to-alls end to end. A 1 ms
  // stage-to-stage message each on the same port makes it 22 ms.
  sim::PipelineCosts costs;
  sim::StageCost cost;
  cost.forward_s = 12;
  cost.forward_comm_s = 10;
  cost.backward_input_s = 14;
  cost.backward_input_comm_s = 10;
  costs.stages = {cost};
  const sim::Action forward{0, 1, sim::OpKind::kForward, true}, backward{0, 0, sim::OpKind::kBackwardInput, false};
  const sim::PairSaving apart = sim::pair_saving(costs, forward, backward);
  EXPECT_DOUBLE_EQ(apart.first_s + apart.second_s, 6);
  costs.stages[0].network_message_s = 1;
  const sim::PairSaving sharing = sim::pair_saving(costs, forward, backward);
  EXPECT_DOUBLE_EQ(26 - sharing.first_s - sharing.second_s, 22);
  EXPECT_DOUBLE_EQ(sharing.first_hidden_s / sharing.second_hidden_s, apart.first_hidden_s / apart.second_hidden_s);
  // A port with time to spare costs nothing: 10 ms of compute each and a
  // 5 ms forward all-to-all, 20 ms a pair against the port's 17.
  costs.stages[0].forward_s = 15;
  costs.stages[0].forward_comm_s = 5;
  costs.stages[0].backward_input_s = 20;
  const sim::PairSaving spare = sim::pair_saving(costs, forward, backward);
  EXPECT_DOUBLE_EQ(spare.first_s + spare.second_s, 15);
}

TEST(MoePipeline, StageMessagesShareThePortWhereTheAllToAllCrossesNodes) {
  // Qwen3-235B-A22B at t = 2, d = 16: ep 32 spans 4 nodes of 8 (the port's
  // 45 GB/s bus bandwidth), ep 8 stays on NVLink.
  const models::ModelConfig model = models::load_model("qwen3-235b-a22b");
  const models::HardwareConfig h100 = models::load_hardware("h100-sxm");
  models::TrainingShape shape;
  shape.seq_len = 4096;
  shape.tp = 2;
  shape.sequence_parallel = true;
  shape.dp = 16;
  shape.ep = 32;
  shape.etp = 1;
  EXPECT_DOUBLE_EQ(step::LayerTable(models::expand_layers(model, shape), h100, shape).shared_network_bandwidth(), 45e9);
  shape.ep = 8;
  EXPECT_EQ(step::LayerTable(models::expand_layers(model, shape), h100, shape).shared_network_bandwidth(), 0);
}

TEST(MoePipeline, PairingIsMegatronsCombined1F1B) {
  // Interleaved 1F1B's steady state runs F(j) of one chunk, then B(i) of
  // another micro-batch: each such forward becomes an overlapped pair with
  // the backward after it, the order left as it was; one micro-batch's F and
  // B never pair. Every shape the search may pair runs to its end
  // (validation finds no cycle), and some pairs are made in each.
  EXPECT_TRUE(sim::pairs_forward_backward("Interleaved1F1B", 2));
  EXPECT_FALSE(sim::pairs_forward_backward("1F1B", 1));
  int shapes = 0;
  for (int p : {2, 3, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int m : {p, p + 1, 2 * p, 3 * p + 1, 4 * p}) {
        sim::Schedule plain;
        try {
          plain = sim::generate_schedule("Interleaved1F1B", {p, m, v, 0});
        } catch (const InputError&) {
          continue;
        }
        sim::Schedule paired = plain;
        sim::pair_forward_backward(paired);
        int pairs = 0;
        for (auto& actions : paired.actions) {
          for (std::size_t k = 0; k < actions.size(); ++k) {
            if (!actions[k].overlapped) continue;
            ++pairs;
            ASSERT_LT(k + 1, actions.size());
            EXPECT_EQ(actions[k].kind, sim::OpKind::kForward);
            EXPECT_TRUE(sim::produces_input_grad(actions[k + 1].kind));
            EXPECT_NE(actions[k].microbatch, actions[k + 1].microbatch);
            actions[k].overlapped = false;
          }
        }
        EXPECT_EQ(paired.actions, plain.actions) << "the order changed";
        if (m >= 2 * p) {
          EXPECT_GT(pairs, 0) << p << " " << v << " " << m;
        }
        sim::pair_forward_backward(paired);
        sim::PipelineCosts costs;
        for (int stage = 0; stage < paired.stages; ++stage) costs.stages.push_back({1, 2, 0, 0, 0, 0, 0, 0.5, 1.0});
        costs.static_bytes.assign(static_cast<std::size_t>(p), 0);
        EXPECT_NO_THROW(sim::simulate(paired, costs, sim::Topology{})) << p << " " << v << " " << m;
        ++shapes;
      }
    }
  }
  EXPECT_GT(shapes, 30);
}

TEST(MoePipeline, NodeLimitedRoutingReachesFewerNodes) {
  // DeepSeek-V3 on ep 64 over 8 nodes: 256 experts in 8 groups, a node's
  // worth each; a token's 8 experts come from 4 groups. Another node is
  // reached when its group is among the 4: 7 x (1 - C(7, 4) / C(8, 4)) = 3.5,
  // against 7 x (1 - C(224, 8) / C(256, 8)) without the limit.
  models::CollectiveWork call{models::CollectiveKind::kAllToAll, 1e8, 1, 8, 256, 8, 4};
  EXPECT_NEAR(models::routed_remote_nodes(call, 8), 3.5, 1e-12);
  // Over 4 nodes two groups share each: 3 x (1 - C(6, 4) / C(8, 4)) = 3 x 55 / 70.
  EXPECT_NEAR(models::routed_remote_nodes(call, 4), 3.0 * 55 / 70, 1e-12);
  // Over 16 nodes a group spans 2: at most 4 x 2 = 8 nodes, fewer than the
  // unlimited count, 15 x (1 - C(240, 8) / C(256, 8)) = 6.8.
  EXPECT_NEAR(models::routed_remote_nodes(call, 16), std::min(8.0, models::remote_nodes_reached(256, 8, 16)), 1e-12);
  const double unlimited = models::remote_nodes_reached(256, 8, 8);
  EXPECT_GT(unlimited, 4.5);
  call.groups = call.group_top_k = 0;
  EXPECT_DOUBLE_EQ(models::routed_remote_nodes(call, 8), unlimited);
  // DeepEP's network time falls with the nodes reached.
  const models::HardwareConfig h100 = models::load_hardware("h100-sxm");
  const models::CollectiveWork limited{models::CollectiveKind::kAllToAll, 8e8, 1, 8, 256, 8, 4};
  const models::CollectiveWork free{models::CollectiveKind::kAllToAll, 8e8, 1, 8, 256};
  EXPECT_LT(models::deepep_s(limited, 64, 1, h100), models::deepep_s(free, 64, 1, h100));
}

TEST(MoePipeline, DeepEpCrossesTheNetworkOncePerNodeReached) {
  // Qwen3-235B-A22B on ep 32 over 4 nodes: 128 experts, 32 a node, top 8.
  // A node is missed with probability C(96, 8) / C(128, 8).
  double missed = 1;
  for (int i = 0; i < 8; ++i) missed *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(models::remote_nodes_reached(128, 8, 4), 3 * (1 - missed), 1e-12);
  EXPECT_EQ(models::remote_nodes_reached(128, 8, 1), 0);
  // One expert a token: it leaves its node with probability 3/4.
  EXPECT_NEAR(models::remote_nodes_reached(128, 1, 4), 0.75, 1e-12);
  const models::HardwareConfig h100 = models::load_hardware("h100-sxm");
  const models::CollectiveWork call{models::CollectiveKind::kAllToAll, 8e8, 1, 8, 128};
  // The network carries 1e8 bytes a copy's worth times the nodes reached;
  // NVLink 7/8 of the copies at the same time; the slower sets the time.
  const double inter = 1e8 * 3 * (1 - missed) / 45e9, intra = 8e8 * 7 / 8 / 360e9;
  EXPECT_NEAR(models::deepep_s(call, 32, 1, h100), std::max(inter, intra) + 3 * 5e-6 + 7 * 3e-6, 1e-12);
  EXPECT_LT(models::deepep_s(call, 32, 1, h100), models::all_to_all_s(8e8, 32, 1, h100));
  // Within a node it is the all-to-all.
  EXPECT_DOUBLE_EQ(models::deepep_s(call, 8, 1, h100), models::all_to_all_s(8e8, 8, 1, h100));
}

planner::PlanRequest deepseek_request(int gpus, int global_batch) {
  planner::PlanRequest request;
  request.model = models::load_model("deepseek-v3");
  request.hardware = models::load_hardware("h100-sxm");
  request.gpus = gpus;
  request.global_batch = global_batch;
  request.seq_len = 4096;
  return request;
}

TEST(MoePipeline, DeepSeekV3PlanUsesExpertParallelismAndFits) {
  // The command: pipeplan plan --model deepseek-v3 --hardware
  // h100-sxm --gpus 1024 --global-batch 8192 --seq 4096.
  const planner::PlanRequest request = deepseek_request(1024, 8192);
  const planner::PlanSearchResult result = planner::search_plans(request, 1);
  ASSERT_FALSE(result.ranked.empty());
  const planner::PlanCandidate& best = result.ranked.front();
  EXPECT_GT(best.ep, 1);
  EXPECT_EQ(best.tp * best.cp * best.dp % (best.ep * best.etp), 0);
  EXPECT_LE(best.max_peak_bytes, request.hardware.gpu.usable_memory_bytes());
  const std::string args = planner::megatron_arguments(best, 8192, 4096, &request.model);
  for (const std::string& flag :
       {std::string("--num-experts 256"), std::string("--moe-router-topk 8"),
        "--expert-model-parallel-size " + std::to_string(best.ep),
        "--expert-tensor-parallel-size " + std::to_string(best.etp), std::string("--moe-layer-freq \"([0]*3+[1]*58)\""),
        std::string("--moe-router-num-groups 8 --moe-router-group-topk 4"),
        std::string("--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 "
                    "--qk-pos-emb-head-dim 64 --v-head-dim 128")}) {
    EXPECT_NE(args.find(flag), std::string::npos) << flag << " in " << args;
  }
  EXPECT_EQ(testing::undefined_megatron_flags(args), "") << args;
}

// --mtp-layers 1: every candidate trains the module on its last stage, at
// c = 1 (Megatron-core runs MTP without context parallelism), and the
// Megatron arguments ask for it; the module's block and second head cost
// time and the last rank's memory.
TEST(MoePipeline, AnMtpModuleIsPlannedOnTheLastStage) {
  planner::PlanRequest request = deepseek_request(256, 512);
  request.tp = 2;
  request.pp = 8;
  request.ep = 8;
  request.micro_batch_size = 1;
  request.schedule = "1F1B";
  const planner::PlanSearchResult plain = planner::search_plans(request, 1);
  request.mtp_layers = 1;
  const planner::PlanSearchResult with = planner::search_plans(request, 1);
  ASSERT_FALSE(plain.ranked.empty());
  ASSERT_FALSE(with.ranked.empty());
  for (const planner::PlanCandidate& candidate : with.ranked) {
    EXPECT_EQ(candidate.mtp_layers, 1);
    EXPECT_EQ(candidate.cp, 1);
  }
  const planner::PlanCandidate& best = with.ranked.front();
  EXPECT_GT(best.iteration_time_s, plain.ranked.front().iteration_time_s);
  const std::string args = planner::megatron_arguments(best, 512, 4096, &request.model);
  EXPECT_NE(args.find("--mtp-num-layers 1"), std::string::npos) << args;
  const std::string layout = step::format_layout(best.split, best.mtp_layers);
  EXPECT_EQ(layout.substr(layout.size() - 2), "mL");
  EXPECT_EQ(testing::undefined_megatron_flags(args), "") << args;
}

// DeepEP without RDMA between nodes: the search keeps its expert-parallel
// groups within a node (of 4 GPUs here, so that Mixtral's ep 8 leaves it),
// counting what it left out; on PCIe servers it is refused before anything
// is searched.
TEST(MoePipeline, DeepEpWithoutRdmaKeepsExpertGroupsInANode) {
  planner::PlanRequest request = deepseek_request(32, 64);
  request.model = models::load_model("mixtral-8x7b");
  request.pp = 4;
  request.etp = 1;
  request.routing.dispatcher = models::MoeDispatcher::kDeepEp;
  request.hardware.network_rdma = false;
  request.hardware.gpus_per_node = 4;
  const planner::PlanSearchResult result = planner::search_plans(request, 30);
  ASSERT_FALSE(result.ranked.empty());
  for (const planner::PlanCandidate& candidate : result.ranked) EXPECT_LE(candidate.ep * candidate.etp, 4);
  EXPECT_GT(result.rejected.count("DeepEP across nodes without RDMA"), 0u);
  request.hardware.network_rdma = true;
  request.hardware.node_nvlink = false;
  EXPECT_THROW(planner::search_plans(request, 1), InputError);
}

// The busiest of ep ranks gets at most every token's copies its experts
// can take: ep x the average. Each candidate is costed at the imbalance
// asked for or that, the lower; the plan says when it took less.
TEST(MoePipeline, EachCandidatesImbalanceIsWhatItsExpertRanksCanHave) {
  planner::PlanRequest request = deepseek_request(32, 64);
  request.model = models::load_model("mixtral-8x7b");
  request.pp = 4;
  request.etp = 1;                 // ep 1 would hold every expert whole: over the cap
  request.routing.load_imbalance = 4;  // 8 experts / top-2
  const planner::PlanSearchResult result = planner::search_plans(request, 30);
  ASSERT_FALSE(result.ranked.empty());
  std::set<int> eps;
  for (const planner::PlanCandidate& candidate : result.ranked) {
    EXPECT_EQ(candidate.routing.load_imbalance, std::min(4.0, static_cast<double>(candidate.ep))) << candidate.ep;
    eps.insert(candidate.ep);
  }
  EXPECT_LT(*eps.begin(), 4);  // some taken below the 4 asked for
  const planner::PlanCandidate& best = result.ranked.front();
  const bool warned = std::any_of(result.warnings.begin(), result.warnings.end(), [](const std::string& warning) {
    return warning.find("--moe-load-imbalance 4 is applied as") != std::string::npos;
  });
  EXPECT_EQ(warned, best.ep > 1 && best.ep < 4);
  // With ep fixed, an imbalance its ranks cannot have is refused.
  testing::expect_refused(
      "plan --model mixtral-8x7b --hardware h100-sxm --gpus 32 --global-batch 64 --seq 4096 --pp 4 --ep 2 "
      "--moe-load-imbalance 3",
      "--moe-load-imbalance 3 is over what --ep 2 allows: the busiest of 2 ranks gets at most 2 x the average");
}

}  // namespace
}  // namespace pipeplan
