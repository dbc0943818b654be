#include "planner/search/stage_recompute_split.h"

#include <algorithm>
#include <limits>

#include "planner/search/candidate_bounds.h"
#include "step/min_max_dp.h"

namespace pipeplan::planner {
namespace {

constexpr double kNoFit = std::numeric_limits<double>::infinity();

// The fastest setting of [i, j) on `stage` under the cap (ties: the
// lighter), or none.
std::optional<std::size_t> fastest_fitting(const RecomputeVariants& variants, const ScheduleContext& context,
                                           double cap, int stage, int i, int j) {
  std::optional<std::size_t> best;
  double best_time = kNoFit, best_memory = kNoFit;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const double memory = stage_memory(*variants[v], context, stage, i, j);
    if (memory > cap) continue;
    const double time = variants[v]->table().stage_time_s(i, j);
    if (time < best_time || (time == best_time && memory < best_memory)) {
      best = v;
      best_time = time;
      best_memory = memory;
    }
  }
  return best;
}

}  // namespace

std::vector<const step::LayerTable*> stage_tables(const RecomputeVariants& variants,
                                                  const std::vector<std::size_t>& settings) {
  std::vector<const step::LayerTable*> tables;
  for (std::size_t setting : settings) tables.push_back(&variants[setting]->table());
  return tables;
}

bool StageRecomputeSplit::uniform() const {
  return std::all_of(setting.begin(), setting.end(), [&](std::size_t s) { return s == setting.front(); });
}

std::optional<StageRecomputeSplit> stage_recompute_split(const RecomputeVariants& variants,
                                                         const ScheduleContext& context, double cap) {
  if (context.peak_points.empty() || variants.empty()) return std::nullopt;
  const int n = variants.front()->table().size();
  const int stages = context.schedule.stages;
  // A run's cost grows with it (each setting's time grows, and fewer fit).
  const auto cost = [&](int stage, int i, int j) {
    const std::optional<std::size_t> v = fastest_fitting(variants, context, cap, stage, i, j);
    return v ? variants[*v]->table().stage_time_s(i, j) : kNoFit;
  };
  const auto fits = [&](int stage, int i, int j) {
    return std::any_of(variants.begin(), variants.end(),
                       [&](const LayerContext* v) { return stage_memory(*v, context, stage, i, j) <= cap; });
  };
  if (!step::any_split_fits(n, stages, fits)) return std::nullopt;
  std::optional<step::StageSplit> split = step::min_max_split(n, stages, cost, fits);
  if (!split) return std::nullopt;
  StageRecomputeSplit result{std::move(*split), {}};
  for (int stage = 0; stage < stages; ++stage) {
    result.setting.push_back(
        *fastest_fitting(variants, context, cap, stage, result.split.first_layer(stage), result.split.end_layer(stage)));
  }
  return result;
}

bool stage_recompute_fits(const RecomputeVariants& variants, const ScheduleContext& context, double cap) {
  double floor = kNoFit;
  for (const LayerContext* v : variants) floor = std::min(floor, rank_memory_floor(*v, context));
  if (floor > cap) return false;
  if (context.peak_points.empty()) return true;
  const int n = variants.front()->table().size();
  return step::any_split_fits(n, context.schedule.stages, [&](int stage, int i, int j) {
    return std::any_of(variants.begin(), variants.end(),
                       [&](const LayerContext* v) { return stage_memory(*v, context, stage, i, j) <= cap; });
  });
}

step::StepBounds stage_recompute_bounds(const RecomputeVariants& variants, const ScheduleContext& context,
                                        const models::HardwareConfig& hardware) {
  step::StepBounds bounds = any_split_bounds(*variants.front(), context, hardware, true);
  for (const LayerContext* v : variants) bounds.peak_bytes = std::min(bounds.peak_bytes, peak_bound_bytes(*v, context));
  return bounds;
}

}  // namespace pipeplan::planner
