// Replaying a plan with the full engine: what `plan` reports for its best
// candidate, `simulate --plan` replays, and the even-split comparison.
#pragma once

#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/plan.h"
#include "planner/plan_file.h"
#include "planner/report/plan_report.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

// What a plan runs with: its shape, pipeline and schedule (not its split,
// costs or memory cap).
step::PipelineSetup plan_setup(const PlanCandidate& plan, int seq_len);

// The plan's split comes from file.layout when set, else from file.plan.split.
// Costs come from `profile` when given, else from the file's profile path,
// else from the time model. Memory is checked against `memory_cap_bytes`
// (0: the GPU's usable memory).
step::ModelSimulation replay_plan(const PlanFile& file, const models::ModelConfig& model,
                                  const models::HardwareConfig& hardware, const sim::SimulationOptions& options = {},
                                  const models::Profile* profile = nullptr, std::int64_t memory_cap_bytes = 0);

// The file's layout on a model of `transformer_layers` blocks in `stages`
// stages; what does not fit is a ParseError at the layout's line of the file
// it was read from (an InputError for a plan that was not read from one).
step::StageSplit plan_layout_split(const PlanFile& file, int transformer_layers, int stages);

// Megatron's even split with the best plan's settings, or why there is none
// (not divisible, or over the cap: then the figures stay, with the reason).
void fill_even_split(PlanReport& report, const PlanRequest& request);

}  // namespace pipeplan::planner
