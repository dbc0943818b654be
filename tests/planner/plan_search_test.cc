// The plan search end to end on real models. Sources: reference.md (model
// shapes; H100 80 GB); issue scenario: Llama 3 70B on 4 stages of 8 x H100
// (tp 8, sequence 8192, micro-batch 1, global batch 32, 1F1B).
#include "planner/search/plan_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "models/hardware.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/plan_file.h"
#include "planner/report/plan_replay.h"
#include "tests/support/plan_request_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::planner {
namespace {

PlanRequest llama70b_four_stages() {
  PlanRequest request = testing::plan_request("llama3-70b", "h100-sxm", 32, 32, 8192);
  request.tp = 8;
  request.pp = 4;
  request.micro_batch_size = 1;
  request.schedule = "1F1B";
  request.recompute = models::Recompute::kNone;
  return request;
}

TEST(PlanSearch, MemoryAwareSplitLowersThePeakAndUnloadsTheFirstStage) {
  // Megatron's even split peaks on stage 0 (the embedding and the most
  // in-flight micro-batches); under a cap below that peak the split moves
  // layers off stage 0 and fits, as fast as the cap allows.
  PlanRequest request = llama70b_four_stages();
  PlanCandidate even;
  {
    const PlanSearchResult open = search_plans(request, 1);
    ASSERT_FALSE(open.ranked.empty());
    even = open.ranked.front();
    even.split = step::even_split(80, 4);
  }
  const step::ModelSimulation megatron = replay_plan({"", "", 32, 8192, even, "", ""}, request.model, request.hardware);
  request.memory_cap_bytes = static_cast<double>(megatron.peak_memory_bytes()) * 0.95;
  const PlanSearchResult result = search_plans(request, 3);
  ASSERT_FALSE(result.ranked.empty());
  const PlanCandidate& best = result.ranked.front();
  const step::ModelSimulation planned = replay_plan({"", "", 32, 8192, best, "", ""}, request.model, request.hardware);
  EXPECT_LE(static_cast<double>(planned.peak_memory_bytes()), request.memory_cap_bytes);
  const std::vector<int> counts = best.split.transformer_layer_counts();
  EXPECT_LT(counts.front(), 20);
  EXPECT_EQ(*std::min_element(counts.begin(), counts.end()), counts.front());
  // Slower than the even split, which does not fit, by no more than the
  // layers moved cost: a few percent.
  EXPECT_LT(planned.tokens_per_s, megatron.tokens_per_s);
  EXPECT_GT(planned.tokens_per_s, megatron.tokens_per_s * 0.95);
}

TEST(PlanSearch, SearchFiguresAreTheSimulatorsFigures) {
  PlanRequest request = llama70b_four_stages();
  request.recompute.reset();
  request.schedule.reset();
  const PlanSearchResult result = search_plans(request, 20);
  ASSERT_GE(result.ranked.size(), 3u);
  for (const PlanCandidate& candidate : result.ranked) {
    const step::ModelSimulation replayed =
        replay_plan({"", "", 32, 8192, candidate, "", ""}, request.model, request.hardware);
    // Reported candidates carry simulate's figures, queueing on links
    // included (DualPipeV's paired sends share one).
    EXPECT_NEAR(replayed.iteration_time_s, candidate.iteration_time_s, 1e-9 * candidate.iteration_time_s)
        << candidate.schedule;
    EXPECT_EQ(replayed.peak_memory_bytes(), candidate.max_peak_bytes) << candidate.schedule;
  }
}

TEST(PlanSearch, RuntimeFlagsApplyWhereTheyCanAndTravelWithThePlan) {
  // The framework's overlaps, asked for the whole search: each candidate
  // carries those that apply to it, replays to its own figures, and a plan
  // file and Megatron's arguments keep them.
  PlanRequest request = llama70b_four_stages();
  request.gpus = 64;
  request.global_batch = 64;
  request.tp.reset();
  request.pp.reset();
  request.runtime = {true, true, true, true};
  request.runtime.optimizer_states_in_bf16 = true;
  const PlanSearchResult result = search_plans(request, 10);
  ASSERT_FALSE(result.ranked.empty());
  for (const PlanCandidate& candidate : result.ranked) {
    // Megatron's overlaps are its distributed optimizer's: ZeRO-1 or none.
    EXPECT_EQ(candidate.runtime.overlap_grad_reduce,
              candidate.dp * candidate.cp > 1 && candidate.zero <= models::ZeroStage::kOptimizer);
    EXPECT_EQ(candidate.runtime.overlap_param_gather, candidate.dp * candidate.cp > 1 && candidate.zero == models::ZeroStage::kOptimizer);
    EXPECT_TRUE(candidate.runtime.grad_reduce_in_bf16);
    // Megatron's precision-aware optimizer runs in its distributed optimizer only.
    EXPECT_EQ(candidate.runtime.optimizer_states_in_bf16, candidate.zero == models::ZeroStage::kOptimizer);
    EXPECT_EQ(candidate.runtime.tp_comm_overlap, candidate.sequence_parallel);
    const step::ModelSimulation replayed =
        replay_plan({"", "", 64, 8192, candidate, "", ""}, request.model, request.hardware);
    EXPECT_NEAR(replayed.iteration_time_s, candidate.iteration_time_s, 1e-9 * candidate.iteration_time_s);
  }
  const PlanCandidate& best = result.ranked.front();
  const std::string path = pipeplan::testing::temp_path("runtime_plan.yaml");
  std::ofstream(path) << write_plan_yaml({"llama3-70b", "h100-sxm", 64, 8192, best, "", ""});
  EXPECT_EQ(read_plan_yaml(path).plan.runtime, best.runtime);
  const std::string args = megatron_arguments(best, 64, 8192);
  EXPECT_EQ(args.find("--grad-reduce-in-bf16") != std::string::npos, best.runtime.grad_reduce_in_bf16);
  EXPECT_EQ(args.find("--use-precision-aware-optimizer --exp-avg-dtype bf16") != std::string::npos,
            best.runtime.optimizer_states_in_bf16);
  EXPECT_EQ(args.find("--tp-comm-overlap") != std::string::npos, best.runtime.tp_comm_overlap);
  EXPECT_EQ(args.find("--overlap-grad-reduce") != std::string::npos, best.runtime.overlap_grad_reduce);
}

// Asked for, but the best plan cannot take it (one data-parallel rank, so
// no distributed optimizer): the plan says so rather than drop it unsaid.
TEST(PlanSearch, Bf16OptimizerStatesTheBestPlanCannotTakeAreNamed) {
  PlanRequest request = testing::plan_request("llama3-8b", "h100-sxm", 8, 32, 4096);
  request.pp = 8;
  request.runtime.optimizer_states_in_bf16 = true;
  const PlanSearchResult result = search_plans(request, 1);
  ASSERT_FALSE(result.ranked.empty());
  ASSERT_EQ(result.ranked.front().dp, 1);
  EXPECT_FALSE(result.ranked.front().runtime.optimizer_states_in_bf16);
  EXPECT_TRUE(std::any_of(result.warnings.begin(), result.warnings.end(), [](const std::string& warning) {
    return warning.starts_with("--optimizer-states-in-bf16 (") && warning.ends_with("does not apply to the best plan");
  })) << ::testing::PrintToString(result.warnings);
}

TEST(PlanSearch, APlanFindsTheFilesItNamesBesideIt) {
  // `plan --hardware myhw.yaml --out dir/plan.yaml`, read from anywhere: the
  // hardware file beside the plan is the one meant; built-in names stay.
  const std::filesystem::path dir = pipeplan::testing::temp_path("plan_beside");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "myhw.yaml") << "name: myhw\nbase: h100-sxm\n";
  PlanCandidate plan;
  plan.pp = 1;
  plan.microbatches = 4;
  plan.schedule = "1F1B";
  plan.virtual_stages = 1;
  plan.split = step::even_split(32, 1);
  std::ofstream(dir / "plan.yaml") << write_plan_yaml({"llama3-8b", "myhw.yaml", 4, 2048, plan, "", ""});
  const PlanFile read = read_plan_yaml((dir / "plan.yaml").string());
  EXPECT_EQ(read.hardware, (dir / "myhw.yaml").string());
  EXPECT_EQ(read.model, "llama3-8b");
  EXPECT_EQ(models::load_hardware(read.hardware).name, "myhw");
}

TEST(PlanSearch, Llama405bOnSixteenThousandGpusFitsEveryStage) {
  PlanRequest request;
  request.model = models::load_model("llama3.1-405b");
  request.hardware = models::load_hardware("h100-sxm");
  request.gpus = 16384;
  request.global_batch = 2048;
  request.seq_len = 8192;
  const PlanSearchResult result = search_plans(request, 5);
  ASSERT_FALSE(result.ranked.empty());
  for (const PlanCandidate& candidate : result.ranked) {
    EXPECT_EQ(candidate.tp * candidate.cp * candidate.pp * candidate.dp, 16384);
    for (std::int64_t peak : candidate.peak_memory_bytes) EXPECT_LE(peak, 80LL << 30);
  }
  EXPECT_GT(result.candidates_evaluated + result.candidates_pruned, 100u);
  // Pareto: faster plans never use less memory than slower ones on the front.
  for (std::size_t i = 1; i < result.pareto.size(); ++i) {
    EXPECT_GE(result.pareto[i].iteration_time_s, result.pareto[i - 1].iteration_time_s);
    EXPECT_LT(result.pareto[i].max_peak_bytes, result.pareto[i - 1].max_peak_bytes);
  }
}

TEST(PlanSearch, ResultsDoNotDependOnThreads) {
  PlanRequest request = llama70b_four_stages();
  request.tp.reset();
  request.pp.reset();
  request.schedule.reset();
  request.recompute.reset();
  request.threads = 1;
  const PlanSearchResult one = search_plans(request, 10);
  request.threads = 3;
  const PlanSearchResult three = search_plans(request, 10);
  ASSERT_EQ(one.ranked.size(), three.ranked.size());
  for (std::size_t i = 0; i < one.ranked.size(); ++i) {
    EXPECT_EQ(one.ranked[i].schedule, three.ranked[i].schedule);
    EXPECT_EQ(one.ranked[i].split, three.ranked[i].split);
    EXPECT_EQ(one.ranked[i].iteration_time_s, three.ranked[i].iteration_time_s);
  }
  EXPECT_EQ(one.candidates_evaluated, three.candidates_evaluated);
  EXPECT_EQ(one.rejected, three.rejected);
}

TEST(PlanSearch, ImpossibleRequestsAreRefused) {
  PlanRequest request = llama70b_four_stages();
  request.gpus = 30;  // t 8 does not divide it
  EXPECT_THROW(search_plans(request, 1), InputError);
  request = llama70b_four_stages();
  request.global_batch = 0;
  EXPECT_THROW(search_plans(request, 1), InputError);
  request = llama70b_four_stages();
  request.memory_cap_bytes = 1e9;  // 1 GB: nothing fits
  const PlanSearchResult tight = search_plans(request, 1);
  EXPECT_TRUE(tight.ranked.empty());
  // At 1 GB the weights alone are over the cap: refused before any split.
  EXPECT_GT(tight.rejected.at("out of memory: the weights and their state alone"), 0u);
  EXPECT_TRUE(tight.lowest_peak.has_value());
}

}  // namespace
}  // namespace pipeplan::planner
