// The unit-step view of a schedule: each action takes one step and runs as
// soon as what it needs ran in an earlier step (its earliest start on the
// dependency graph with unit weights). Used to draw the rank-by-step grid of
// a schedule and to show where one deadlocks. PyTorch's own step count,
// which walks ranks in order within a step, is sim/pytorch_steps.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/action_index.h"
#include "sim/dependency_graph.h"
#include "sim/schedule.h"

namespace pipeplan::sim {

struct StepLayout {
  std::vector<std::vector<int>> step;  // per rank, per action: its step, -1 if it never runs
  int steps = 0;                       // steps until the last action that runs
};

// `graph` must be built over `schedule` (any semantics, weights ignored).
StepLayout unit_step_layout(const Schedule& schedule, const ActionIndex& index, const DependencyGraph& graph);

// Ranks by steps. Cells of `marked` vertices are drawn as [action] in the
// step where they would have run. Only the last `max_steps` steps up to the
// marks (or the end) are drawn.
std::string render_step_grid(const Schedule& schedule, const ActionIndex& index, const StepLayout& layout,
                             const std::vector<std::uint32_t>& marked = {}, int max_steps = 24);

}  // namespace pipeplan::sim
