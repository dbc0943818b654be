// How the plan search splits a candidate and bounds it for any split: the
// request's partitioner, or with per-stage recomputation the split and the
// stages' settings together (planner/search/stage_recompute_split.h). Part of
// CandidateEvaluator (candidate_evaluator.h).
#include <mutex>
#include <stdexcept>

#include "planner/search/candidate_bounds.h"
#include "planner/search/candidate_evaluator.h"
#include "planner/search/search_contexts.h"
#include "planner/search/search_split.h"
#include "planner/search/stage_recompute_split.h"
#include "step/framework_support.h"

namespace pipeplan::planner {

void CandidateEvaluator::choose_split(PendingCandidate& pending) const {
  const SearchGroup& group = groups_[pending.group];
  const LayerContext& layers = layers_[pending.group][pending.layers];
  const ScheduleContext& context = *schedule_of(pending.schedule, group);
  const auto fastest = [&](int stages) { return fastest_split(pending.group, pending.layers, stages); };
  std::optional<step::StageSplit> split;
  std::vector<const step::LayerTable*> tables(static_cast<std::size_t>(context.schedule.stages), &layers.table());
  if (!layers.stage_variants.empty()) {
    const RecomputeVariants variants = variants_of(pending.group, layers);
    std::optional<StageRecomputeSplit> chosen = stage_recompute_split(variants, context, cap_);
    if (!chosen) throw std::logic_error("a per-stage candidate some split was to fit has none");
    // One setting everywhere is that setting's own candidate.
    if (chosen->uniform()) {
      pending.uniform_per_stage = true;
      return;
    }
    tables = stage_tables(variants, chosen->setting);
    {
      const std::lock_guard<std::mutex> lock(stage_settings_mutex_);
      stage_settings_.push_back(std::move(chosen->setting));
      pending.stage_settings = static_cast<std::uint32_t>(stage_settings_.size());
    }
    split = std::move(chosen->split);
  } else if (pending.framework_split) {
    // Replayed fitting or not, as a split the user gives.
    split = step::framework_split(step::Framework::kDeepSpeed, layers.blocks(), context.schedule.stages);
  } else {
    split = partition(layers, context, request_, cap_, fastest);
  }
  // schedule() kept only candidates some split fits.
  if (!split) throw std::logic_error("a candidate the partitioner was to fit has no split");
  const step::ModelStageCosts costs = step::build_stage_costs(tables, layers.shape, *split, context.schedule);
  pending.bounds = step::step_bounds(context.schedule, context.span, context.profiles, costs,
                                     step::step_overhead(costs, request_.hardware, layers.shape));
  const double tokens = step_tokens(group, request_.seq_len);
  pending.tokens_bound = tokens / pending.bounds.iteration_time_s;
  pending.split = std::move(*split);
}

std::optional<step::StageSplit> CandidateEvaluator::fastest_split(std::size_t group, std::size_t layers,
                                                                  int stages) const {
  const auto key = std::make_tuple(group, layers, stages);
  {
    const std::lock_guard<std::mutex> lock(time_splits_mutex_);
    const auto found = time_splits_.find(key);
    if (found != time_splits_.end()) return found->second;
  }
  std::optional<step::StageSplit> split = time_split(layers_[group][layers], stages);
  const std::lock_guard<std::mutex> lock(time_splits_mutex_);
  return time_splits_.emplace(key, std::move(split)).first->second;
}

RecomputeVariants CandidateEvaluator::variants_of(std::size_t group, const LayerContext& layers) const {
  RecomputeVariants variants;
  for (std::size_t index : layers.stage_variants) variants.push_back(&layers_[group][index]);
  return variants;
}

bool CandidateEvaluator::split_fits(std::size_t group, const LayerContext& layers,
                                    const ScheduleContext& context) const {
  if (layers.stage_variants.empty()) return some_split_fits(layers, context, request_, cap_);
  return stage_recompute_fits(variants_of(group, layers), context, cap_);
}

step::StepBounds CandidateEvaluator::split_bounds(std::size_t group, const LayerContext& layers,
                                                  const ScheduleContext& context, bool searched_split) const {
  if (layers.stage_variants.empty()) return any_split_bounds(layers, context, request_.hardware, searched_split);
  return stage_recompute_bounds(variants_of(group, layers), context, request_.hardware);
}

}  // namespace pipeplan::planner
