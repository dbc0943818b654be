// Bounds on a search candidate that need no split (or no replay): its
// stages' memory for a given run of layers, the memory floor no split goes
// below, whether any split fits, and its step time and peak for any split.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "models/hardware.h"
#include "planner/plan.h"
#include "planner/search/search_contexts.h"
#include "step/model_simulation.h"
#include "step/stage_split.h"

namespace pipeplan::planner {

// The largest stage memory (weights, state, buffers and the activations at
// the stage's peaks) of layers [i, j) on `stage`; exact for one chunk per
// rank. Inline: the memory partitioner calls it O(S n log n) times.
inline double stage_memory(const LayerContext& layers, const ScheduleContext& context, int stage, int i, int j) {
  const step::LayerTable& table = layers.table();
  const double full = table.activation_bytes(i, j), partial = table.weight_grad_bytes(i, j);
  double activations = 0;
  for (const auto& [a, w] : context.peak_points[static_cast<std::size_t>(stage)]) {
    activations = std::max(activations, a * full + w * partial);
  }
  return layers.state_bytes(i, j) + table.fp8_weight_copy_bytes(i, j) + 2 * table.boundary_bytes(j) +
         table.working_bytes(i, j) + activations;
}
double stage_memory_max(const LayerContext& layers, const ScheduleContext& context, const step::StageSplit& split);

// What no split's largest rank memory can go below (see the definition).
double rank_memory_floor(const LayerContext& layers, const ScheduleContext& context);
// The floor as a bound on a replay's peak: lowered a little, as the replay
// rounds bytes and sums them in its own order.
std::int64_t peak_bound_bytes(const LayerContext& layers, const ScheduleContext& context);

// Whether the request's partitioner finds a split under the cap, without
// choosing one: exactly when the search's partition does.
bool some_split_fits(const LayerContext& layers, const ScheduleContext& context, const PlanRequest& request,
                     double cap);

// Bounds no split's replay goes below; `searched_split` when the search
// chooses the split (every stage then holds a block).
step::StepBounds any_split_bounds(const LayerContext& layers, const ScheduleContext& context,
                                  const models::HardwareConfig& hardware, bool searched_split);

}  // namespace pipeplan::planner
