// Per-stage recomputation in the plan search (AdaPipe's choice): each stage
// of a one-chunk-per-rank schedule takes its own recomputation, the early
// stages (which hold more micro-batches) recomputing where the late ones
// need not. The split and each stage's setting are chosen together, exactly:
// a stage of layers [i, j) costs the time of its fastest setting whose
// memory at the stage's peaks fits the cap, and the min-max partition
// balances those costs.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "models/hardware.h"
#include "planner/search/search_contexts.h"
#include "step/model_simulation.h"
#include "step/stage_split.h"

namespace pipeplan::planner {

// The settings a stage may take: the same layers tabled with each
// recomputation (none first: the fastest), one chunk per rank.
using RecomputeVariants = std::vector<const LayerContext*>;

struct StageRecomputeSplit {
  step::StageSplit split{std::vector<int>{0, 1}};
  std::vector<std::size_t> setting;  // per stage, into the variants
  // Whether every stage took the same setting (the uniform candidate's).
  bool uniform() const;
};

// Each stage's table: that of its setting among the variants.
std::vector<const step::LayerTable*> stage_tables(const RecomputeVariants& variants,
                                                  const std::vector<std::size_t>& settings);

// The split with the slowest stage as fast as any allows with each stage
// at its fastest setting under the cap; none when no split fits in any.
std::optional<StageRecomputeSplit> stage_recompute_split(const RecomputeVariants& variants,
                                                         const ScheduleContext& context, double cap);
// Whether some split fits with each stage in some setting (exactly when
// stage_recompute_split finds one); with an outline (no peak points) the
// least of the settings' memory floors against the cap.
bool stage_recompute_fits(const RecomputeVariants& variants, const ScheduleContext& context, double cap);
// Bounds no per-stage choice goes below: the time of no recomputation's
// (no setting is faster), the least of the settings' peaks.
step::StepBounds stage_recompute_bounds(const RecomputeVariants& variants, const ScheduleContext& context,
                                        const models::HardwareConfig& hardware);

}  // namespace pipeplan::planner
