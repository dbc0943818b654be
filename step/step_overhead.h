// What a step costs besides the pipeline: the data-parallel gradient
// synchronisation (after the pipeline, or overlapped with its tail on the
// replay's timings) and the optimizer step.
#pragma once

#include <vector>

#include "models/hardware.h"
#include "models/training_shape.h"
#include "sim/schedule.h"
#include "sim/simulate.h"
#include "sim/topology.h"
#include "step/stage_costs.h"
#include "step/stage_split.h"

namespace pipeplan::step {

// What a step costs besides the pipeline, on its slowest rank.
struct StepOverhead {
  double gradient_sync_s = 0;  // the part not overlapped with the pipeline
  double optimizer_step_s = 0;
};
StepOverhead step_overhead(const ModelStageCosts& costs, const models::HardwareConfig& hardware,
                           const models::TrainingShape& shape);
// One rank's, holding `params` parameters: both terms grow with them (a
// collective's and the optimizer's time is latency plus bytes over a
// saturating rate), so the busiest rank's is no less than the average's.
StepOverhead rank_step_overhead(RankParams params, const models::HardwareConfig& hardware,
                                const models::TrainingShape& shape);

// A pipeline rank's GPU kind and sharding, where ranks differ (a pipeline
// across GPU kinds: each rank's t, its gradient synchronisation over its
// kind's fabric, its optimizer at its kind's memory rate).
struct RankPlatform {
  const models::HardwareConfig* hardware = nullptr;
  models::TrainingShape shape;
};

// What the overlapped synchronisation (TrainingShape::overlap_grad_reduce,
// overlap_param_gather) leaves exposed after the replay `report`, on the
// rank that exposes most, with the SMs its hidden part took from compute.
// Where the reduction crosses the network it shares each GPU's port with
// the stage-to-stage messages that cross it after the gradients are final.
double overlapped_sync_s(const sim::SimulationReport& report, const sim::Schedule& schedule,
                         const ModelStageCosts& costs, const StageSplit& split,
                         const std::vector<RankPlatform>& platforms, const sim::Topology& topology);

}  // namespace pipeplan::step
