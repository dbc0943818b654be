// Per-stage recomputation (AdaPipe, Sun et al. 2024: each pipeline stage
// chooses its own recomputation, chosen with the split): the exact split
// against brute force on a small model, the must-show case where it fits a
// plan that no uniform setting fits without losing more time, and the plan
// file, replay and framework arguments that carry it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>

#include "common/error.h"
#include "models/layers.h"
#include "models/training_state.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/plan_file.h"
#include "planner/report/plan_replay.h"
#include "planner/search/candidate_bounds.h"
#include "planner/search/plan_search.h"
#include "planner/search/schedule_context.h"
#include "planner/search/stage_recompute_split.h"
#include "tests/support/plan_request_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::planner {
namespace {

using models::Recompute;

// Written to a file of its own and read back, as `plan --out` and
// `simulate --plan` do.
PlanFile read_back(const std::string& text, const std::string& name) {
  const std::filesystem::path path = pipeplan::testing::temp_path("stage_recompute_" + name);
  std::ofstream(path) << text;
  PlanFile file = read_plan_yaml(path.string());
  std::filesystem::remove(path);
  return file;
}

// Llama 3 8B on 8 H100s as 8 pipeline stages of 1F1B, 64 micro-batches of
// 8192 tokens: stage 0 holds 8 micro-batches at its peak, stage 7 one.
PlanRequest llama8b_eight_stages(double cap_gib) {
  PlanRequest request = testing::plan_request("llama3-8b", "h100-sxm", 8, 64, 8192);
  request.memory_cap_bytes = cap_gib * (1ull << 30);
  request.tp = 1;
  request.pp = 8;
  request.micro_batch_size = 1;
  request.schedule = "1F1B";
  return request;
}

TEST(StageRecompute, LabelsAndListsRoundTrip) {
  const std::vector<Recompute> stages{Recompute::kFull, Recompute::kFull, Recompute::kSelective, Recompute::kNone};
  EXPECT_EQ(models::stage_recompute_name(stages), "full,full,selective,none");
  EXPECT_EQ(models::parse_stage_recompute("full,full selective,none", "--recompute"), stages);
  EXPECT_EQ(models::parse_stage_recompute("FULL,Full,Selective,none", "--recompute"), stages);  // any case
  EXPECT_EQ(models::stage_recompute_label(stages, models::kDefaultRecomputeModules),
            "per-stage:full x2,selective,none");
  EXPECT_THROW(models::parse_stage_recompute(",", "--recompute"), InputError);
  EXPECT_THROW(models::parse_stage_recompute("full,some", "--recompute"), InputError);
}

// Every split of n layers into S stages (each holds a block; the embedding
// on the first stage, the output layer on the last) and every setting per
// stage: the least slowest-stage time with every stage under the cap.
double brute_force_best(const RecomputeVariants& variants, const ScheduleContext& context, double cap) {
  const int n = variants.front()->table().size();
  const int stages = context.schedule.stages;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cuts(static_cast<std::size_t>(stages) + 1);
  cuts.front() = 0;
  cuts.back() = n;
  // Inner cuts strictly increasing in [2, n - 2] (blocks 1 .. n - 2).
  auto recurse = [&](auto&& self, int stage, int from) -> void {
    if (stage == stages) {
      double slowest = 0;
      for (int s = 0; s < stages; ++s) {
        const int i = cuts[static_cast<std::size_t>(s)], j = cuts[static_cast<std::size_t>(s) + 1];
        double fastest = std::numeric_limits<double>::infinity();
        for (const LayerContext* v : variants) {
          if (stage_memory(*v, context, s, i, j) <= cap) fastest = std::min(fastest, v->table().stage_time_s(i, j));
        }
        slowest = std::max(slowest, fastest);
      }
      best = std::min(best, slowest);
      return;
    }
    for (int cut = from; cut <= n - 2 - (stages - 1 - stage); ++cut) {
      cuts[static_cast<std::size_t>(stage)] = cut;
      self(self, stage + 1, cut + 1);
    }
  };
  recurse(recurse, 1, 2);
  return best;
}

TEST(StageRecompute, SplitIsTheBruteForceOptimum) {
  PlanRequest request = llama8b_eight_stages(0);
  // 12 blocks over 4 stages: small enough to enumerate every split.
  request.model.layers = 12;
  models::TrainingShape shape;
  shape.micro_batch_size = 1;
  shape.seq_len = 8192;
  shape.pipelined = true;
  std::vector<LayerContext> contexts;
  for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    shape.recompute = recompute;
    const models::LayerKinds kinds = models::expand_layer_kinds(request.model, shape);
    auto tabled = std::make_shared<const TabledLayers>(
        TabledLayers{step::LayerTable(kinds, request.hardware, shape), kinds.transformer_layers(), 0.0});
    contexts.push_back({shape, tabled, models::state_bytes(shape).total(), models::expert_state_bytes(shape).total()});
  }
  const RecomputeVariants variants{&contexts[0], &contexts[1], &contexts[2]};
  const ScheduleChoice choice{"1F1B", 1, std::nullopt, false};
  const std::optional<ScheduleContext> context = schedule_context(choice, 4, 16, false);
  ASSERT_TRUE(context);
  // From a cap only full recomputation meets to one every setting meets.
  const double lean = stage_memory(contexts[2], *context, 0, 0, 5);
  const double loose = stage_memory(contexts[0], *context, 0, 0, 13);
  int mixed = 0;
  for (int step = 0; step <= 12; ++step) {
    const double cap = lean + (loose - lean) * step / 12;
    const double expected = brute_force_best(variants, *context, cap);
    const std::optional<StageRecomputeSplit> chosen = stage_recompute_split(variants, *context, cap);
    ASSERT_EQ(chosen.has_value(), expected < std::numeric_limits<double>::infinity()) << step;
    EXPECT_EQ(stage_recompute_fits(variants, *context, cap), chosen.has_value()) << step;
    if (!chosen) continue;
    double slowest = 0;
    for (int s = 0; s < 4; ++s) {
      const int i = chosen->split.first_layer(s), j = chosen->split.end_layer(s);
      const LayerContext& setting = *variants[chosen->setting[static_cast<std::size_t>(s)]];
      EXPECT_LE(stage_memory(setting, *context, s, i, j), cap) << step << " stage " << s;
      slowest = std::max(slowest, setting.table().stage_time_s(i, j));
    }
    EXPECT_DOUBLE_EQ(slowest, expected) << step;
    if (!chosen->uniform()) ++mixed;
  }
  // The sweep meets caps where the stages differ.
  EXPECT_GT(mixed, 0);
}

TEST(StageRecompute, FitsWhereNoUniformSettingFitsWithoutLosingMoreTime) {
  // Under 32 GiB, stage 0's eight micro-batches fit only recomputed: no
  // split fits without recomputation or with selective recomputation, and
  // full recomputation everywhere fits but recomputes the late stages too,
  // which hold few micro-batches.
  const double cap = 32.0 * (1ull << 30);
  for (Recompute uniform : {Recompute::kNone, Recompute::kSelective}) {
    PlanRequest request = llama8b_eight_stages(32);
    request.recompute = uniform;
    EXPECT_TRUE(search_plans(request, 1).ranked.empty()) << models::recompute_name(uniform);
  }
  PlanRequest full = llama8b_eight_stages(32);
  full.recompute = Recompute::kFull;
  const PlanSearchResult uniform = search_plans(full, 1);
  ASSERT_FALSE(uniform.ranked.empty());

  const PlanSearchResult searched = search_plans(llama8b_eight_stages(32), 3);
  ASSERT_FALSE(searched.ranked.empty());
  const PlanCandidate& best = searched.ranked.front();
  ASSERT_EQ(best.stage_recompute.size(), 8u);
  EXPECT_LE(static_cast<double>(best.max_peak_bytes), cap);
  // Stage 0 holds the most and recomputes; the last stage holds one micro-batch and does not.
  EXPECT_EQ(best.stage_recompute.front(), Recompute::kFull);
  EXPECT_EQ(best.stage_recompute.back(), Recompute::kNone);
  EXPECT_LT(best.iteration_time_s, uniform.ranked.front().iteration_time_s * 0.9);
}

TEST(StageRecompute, PlanFileCarriesItAndTheReplayGivesTheSearchsFigures) {
  const PlanRequest request = llama8b_eight_stages(32);
  const PlanSearchResult result = search_plans(request, 1);
  ASSERT_FALSE(result.ranked.empty());
  const PlanCandidate& best = result.ranked.front();
  ASSERT_FALSE(best.stage_recompute.empty());
  const PlanFile written{"llama3-8b", "h100-sxm", 64, 8192, best, "", ""};
  const PlanFile read = read_back(write_plan_yaml(written), "round_trip.yaml");
  EXPECT_EQ(read.plan.stage_recompute, best.stage_recompute);
  EXPECT_EQ(read.plan.recompute, Recompute::kNone);
  const step::ModelSimulation replayed = replay_plan(read, request.model, request.hardware);
  EXPECT_NEAR(replayed.iteration_time_s, best.iteration_time_s, 1e-9 * best.iteration_time_s);
  EXPECT_EQ(replayed.peak_memory_bytes(), best.max_peak_bytes);
  // Megatron recomputes one way everywhere: the heaviest stage's, said.
  const std::string args = megatron_arguments(best, 64, 8192, &request.model);
  EXPECT_NE(args.find("--recompute-granularity full"), std::string::npos);
  EXPECT_NE(args.find("recompute per stage (" + models::stage_recompute_name(best.stage_recompute)),
            std::string::npos);
}

TEST(StageRecompute, APlanFileListingTheWrongStageCountIsRefused) {
  const PlanSearchResult result = search_plans(llama8b_eight_stages(32), 1);
  ASSERT_FALSE(result.ranked.empty());
  PlanCandidate plan = result.ranked.front();
  std::string text = write_plan_yaml({"llama3-8b", "h100-sxm", 64, 8192, plan, "", ""});
  const std::size_t at = text.find("recompute: [");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "recompute: [none, ");
  try {
    read_back(text, "nine_stages.yaml");
    FAIL() << "a list of 9 settings for 8 stages was read";
  } catch (const ParseError& error) {
    EXPECT_NE(std::string(error.what()).find("'recompute' lists 9 stages' settings"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace pipeplan::planner
