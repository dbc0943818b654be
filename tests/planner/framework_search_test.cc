// The search kept to one framework (PlanRequest::framework) and the best
// plan each framework runs, on models that need each restricted feature:
// V and zero-bubble schedules and context parallelism (Llama 3 70B on 32
// H100s: the open search's best is InterleavedZeroBubble with c = 2),
// ZeRO-2/3 without a pipeline (Llama 3 8B on 8 H100s) and expert
// parallelism under pipelining (Mixtral 8x7B on 16 H100s). Invariants:
// every plan a kept search returns is one the framework runs, its split
// included (plan_refusal), and the open search's best for a framework is
// the kept search's best, figure for figure.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/error.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/frameworks/plan_refusal.h"
#include "planner/search/plan_search.h"
#include "planner/search/search_space.h"
#include "tests/support/megatron_flags.h"
#include "tests/support/plan_request_support.h"

namespace pipeplan::planner {
namespace {

using step::Framework;

void expect_kept_to(const PlanSearchResult& result, Framework framework, int seq_len) {
  ASSERT_FALSE(result.ranked.empty());
  for (const std::vector<PlanCandidate>* list : {&result.ranked, &result.pareto}) {
    for (const PlanCandidate& plan : *list) {
      EXPECT_EQ(plan_refusal(framework, plan, seq_len), nullptr)
          << step::framework_info(framework).key << ": " << plan.schedule << " v=" << plan.virtual_stages
          << " zero=" << static_cast<int>(plan.zero);
    }
  }
}

// The open search's best for the framework is what the kept search finds.
void expect_tracked_best(const PlanSearchResult& open, const PlanSearchResult& kept, Framework framework) {
  const std::optional<PlanCandidate>& tracked = open.framework_best[static_cast<std::size_t>(framework)];
  ASSERT_TRUE(tracked.has_value()) << step::framework_info(framework).key;
  EXPECT_NEAR(tracked->tokens_per_s, kept.ranked.front().tokens_per_s, 1e-9 * tracked->tokens_per_s);
  EXPECT_EQ(tracked->max_peak_bytes, kept.ranked.front().max_peak_bytes);
  if (tracked->pp > 1) {
    EXPECT_EQ(step::split_refusal(framework, tracked->split), nullptr);
  }
}

PlanSearchResult search_within(PlanRequest request, Framework framework) {
  request.framework = framework;
  return search_plans(request, 5);
}

TEST(FrameworkSearch, MegatronAndDeepSpeedGetTheirSchedulesWhereTheOpenBestIsAZeroBubbleOne) {
  const PlanRequest request = testing::plan_request("llama3-70b", "h100-sxm", 32, 32, 8192);
  const PlanSearchResult open = search_plans(request, 5);
  ASSERT_FALSE(open.ranked.empty());
  const PlanCandidate& best = open.ranked.front();
  EXPECT_EQ(best.frameworks & step::framework_bit(Framework::kMegatronLm), 0) << best.schedule;
  EXPECT_GT(best.cp, 1);
  for (Framework framework : {Framework::kMegatronLm, Framework::kDeepSpeed}) {
    const PlanSearchResult kept = search_within(request, framework);
    expect_kept_to(kept, framework, request.seq_len);
    expect_tracked_best(open, kept, framework);
    EXPECT_LE(kept.ranked.front().tokens_per_s, best.tokens_per_s);
  }
  const PlanSearchResult deepspeed = search_within(request, Framework::kDeepSpeed);
  for (const PlanCandidate& plan : deepspeed.ranked) EXPECT_EQ(plan.cp, 1);
  // DeepSpeed's pipelines are split as its PipelineModule splits them; the
  // open search's own splits are not credited to it.
  for (const PlanCandidate& plan : deepspeed.ranked) {
    if (plan.pp > 1) {
      EXPECT_EQ(plan.split, *step::framework_split(Framework::kDeepSpeed, 80, plan.split.stages()));
    }
  }
  for (const PlanCandidate& plan : open.ranked) {
    if (plan.pp > 1 && plan.split != *step::framework_split(Framework::kDeepSpeed, 80, plan.split.stages())) {
      EXPECT_EQ(plan.frameworks & step::framework_bit(Framework::kDeepSpeed), 0);
    }
  }
}

TEST(FrameworkSearch, DeepSpeedTakesNoSplitButItsOwn) {
  PlanRequest request = testing::plan_request("llama3-8b", "h100-sxm", 16, 32, 4096);
  request.framework = Framework::kDeepSpeed;
  request.pp = 4;
  const auto refused = [&](const std::string& option) {
    try {
      search_plans(request, 1);
      ADD_FAILURE() << option << " was taken";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(option + ": DeepSpeed v0.16 splits the blocks itself"),
                std::string::npos)
          << error.what();
    }
  };
  const PlanSearchResult own = search_plans(request, 1);
  ASSERT_FALSE(own.ranked.empty());
  EXPECT_EQ(own.ranked.front().split.transformer_layer_counts(), (std::vector<int>{8, 8, 8, 8}));
  request.layer_counts = std::vector<int>{7, 9, 9, 7};
  refused("--layers 7,9,9,7");
  request.layer_counts = std::vector<int>{8, 8, 8, 8};  // its own: taken
  EXPECT_FALSE(search_plans(request, 1).ranked.empty());
  request.layer_counts.reset();
  request.layout = "Et*8|t*8|t*8|t*8L";
  refused("--layout Et*8|t*8|t*8|t*8L");
  request.layout.reset();
  request.partition = step::PartitionMethod::kTime;
  refused("--partition time");
  // Under any framework, a given split other than DeepSpeed's is not DeepSpeed's to run.
  request.partition = step::PartitionMethod::kMemory;
  request.framework = Framework::kAny;
  request.layer_counts = std::vector<int>{7, 9, 9, 7};
  const PlanSearchResult open = search_plans(request, 5);
  ASSERT_FALSE(open.ranked.empty());
  for (const PlanCandidate& plan : open.ranked) EXPECT_EQ(plan.frameworks & step::framework_bit(Framework::kDeepSpeed), 0);
}

TEST(FrameworkSearch, MegatronShardsNoFurtherThanZeroOneAndTorchtitanUsesFsdp) {
  const PlanRequest request = testing::plan_request("llama3-8b", "h100-sxm", 8, 64, 4096);
  const PlanSearchResult open = search_plans(request, 5);
  ASSERT_FALSE(open.ranked.empty());
  EXPECT_GE(open.ranked.front().zero, models::ZeroStage::kGradients);
  for (Framework framework : {Framework::kMegatronLm, Framework::kTorchtitan}) {
    const PlanSearchResult kept = search_within(request, framework);
    expect_kept_to(kept, framework, request.seq_len);
    expect_tracked_best(open, kept, framework);
  }
  for (const PlanCandidate& plan : search_within(request, Framework::kMegatronLm).ranked) {
    EXPECT_LE(plan.zero, models::ZeroStage::kOptimizer);
  }
}

TEST(FrameworkSearch, DeepSpeedPipelinesNoExperts) {
  const PlanRequest request = testing::plan_request("mixtral-8x7b", "h100-sxm", 16, 32, 4096);
  const PlanSearchResult open = search_plans(request, 5);
  ASSERT_FALSE(open.ranked.empty());
  EXPECT_GT(open.ranked.front().ep, 1);
  EXPECT_GT(open.ranked.front().pp, 1);
  const PlanSearchResult kept = search_within(request, Framework::kDeepSpeed);
  expect_kept_to(kept, Framework::kDeepSpeed, request.seq_len);
  expect_tracked_best(open, kept, Framework::kDeepSpeed);
  for (const PlanCandidate& plan : kept.ranked) EXPECT_TRUE(plan.ep == 1 || plan.pp == 1);
}

TEST(FrameworkSearch, AFixedChoiceTheFrameworkCannotRunIsRefusedNamingTheOption) {
  PlanRequest request = testing::plan_request("llama3-70b", "h100-sxm", 64, 256, 8192);
  request.framework = Framework::kMegatronLm;
  request.schedule = "ZBV";
  try {
    search_plans(request, 1);
    FAIL();
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--schedule ZBV: Megatron-LM core_r0.14.0 does not run it"), std::string::npos) << message;
    EXPECT_NE(message.find("it runs 1F1B, Interleaved1F1B"), std::string::npos) << message;
  }
  request.schedule.reset();
  request.zero = models::ZeroStage::kWeights;
  EXPECT_THROW(search_plans(request, 1), InputError);
  request.zero.reset();
  request.framework = Framework::kTorchtitan;
  request.rank_order = true;
  EXPECT_THROW(search_plans(request, 1), InputError);
}

TEST(FrameworkSearch, EveryMegatronArgumentIsOneItsParserDefines) {
  // Every flag the writer has: interleaved, experts folded, each overlap.
  PlanCandidate plan;
  std::tie(plan.tp, plan.cp, plan.pp, plan.dp, plan.ep, plan.etp) = std::make_tuple(2, 2, 4, 4, 4, 1);
  std::tie(plan.virtual_stages, plan.microbatches, plan.schedule) = std::make_tuple(2, 8, "Interleaved1F1B");
  plan.sequence_parallel = true;
  plan.pipeline_first = true;
  plan.zero = models::ZeroStage::kOptimizer;
  plan.runtime = {true, true, true, true, true, true, true};
  plan.routing = {1.0, 1.25, models::MoeDispatcher::kDeepEp};
  plan.split = step::even_split(32, 8);
  const models::ModelConfig model = models::load_model("mixtral-8x7b");
  for (models::Recompute recompute : {models::Recompute::kSelective, models::Recompute::kFull}) {
    plan.recompute = recompute;
    plan.recompute_modules = models::kCoreAttention | models::kLayerNorm;
    const std::string args = megatron_arguments(plan, 64, 4096, &model);
    EXPECT_EQ(testing::undefined_megatron_flags(args), "") << args;
  }
}

TEST(FrameworkSearch, ScheduleListsAndSetsNameTheirFamilies) {
  std::vector<std::string> names;
  for (const sim::ScheduleFamily* family : schedule_set_families("1F1B, looped,ZBV")) names.emplace_back(family->name);
  EXPECT_EQ(names, (std::vector<std::string>{"1F1B", "Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble",
                                             "ZBVZeroBubble"}));
  EXPECT_TRUE(is_schedule_set("1F1B,GPipe"));
  EXPECT_TRUE(is_schedule_set("Zero-Bubble"));
  EXPECT_FALSE(is_schedule_set("ZBV"));
  EXPECT_FALSE(is_schedule_set("Interleaved"));  // Interleaved1F1B's alias, not a set
  EXPECT_THROW(schedule_set_families("1F1B,,GPipe"), InputError);
  EXPECT_THROW(schedule_set_families("1F1B,nope"), InputError);
  PlanRequest request = testing::plan_request("llama3-8b", "h100-sxm", 8, 32, 4096);
  request.pp = 4;
  request.schedule = "1F1B,Interleaved1F1B";
  const PlanSearchResult result = search_plans(request, 5);
  ASSERT_FALSE(result.ranked.empty());
  for (const PlanCandidate& plan : result.ranked) {
    EXPECT_TRUE(plan.schedule == "1F1B" || plan.schedule == "Interleaved1F1B") << plan.schedule;
  }
}

}  // namespace
}  // namespace pipeplan::planner
