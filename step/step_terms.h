// One step's time broken into named terms per pipeline rank (`simulate
// --explain`): the rank's compute by kind of work, the pipeline's idle time
// split into what the stage-to-stage transfers add and the bubble that
// remains with instant transfers, and the step's data-parallel gradient
// synchronisation and optimizer. The terms of every rank add up to the
// step time.
#pragma once

#include <vector>

#include "models/time_model.h"
#include "sim/simulate.h"
#include "step/stage_split.h"

namespace pipeplan::step {

struct StepTerms {
  int rank = 0;
  double gemm_s = 0;
  double attention_s = 0;
  double elementwise_s = 0;
  double tp_comm_s = 0;      // tensor-parallel collectives, exposed (not overlapped)
  double cp_comm_s = 0;      // context parallelism's ring transfers, exposed
  double shard_comm_s = 0;   // ZeRO-2/3's per-micro-batch gathers and reduce-scatters, exposed
  double expert_comm_s = 0;  // MoE token dispatch and combine (all-to-all, expert TP), exposed
  double overhead_s = 0;     // outside the kernels: per layer and per chunk, per forward and backward pass
  double port_shared_s = 0;  // passes slowed where stage-to-stage messages share the network port
  double p2p_exposed_s = 0;  // pipeline time the stage-to-stage transfers add
  double bubble_s = 0;       // idle with instant transfers
  double dp_sync_s = 0;      // the step's gradient synchronisation (its slowest rank's), exposed
  double optimizer_s = 0;    // the step's optimizer (its slowest rank's)
  // Parts of the terms above, not terms: of gemm_s, a mixture of experts'
  // grouped GEMMs; of elementwise_s, its routing (models::PassTerms).
  double expert_gemm_s = 0;
  double routing_s = 0;
  // Of overhead_s: mixture-of-experts passes waiting on the host
  // (runtime.moe_layer_host, models::moe_host_bound_s).
  double moe_host_s = 0;
  double total_s() const {
    return gemm_s + attention_s + elementwise_s + tp_comm_s + cp_comm_s + shard_comm_s + expert_comm_s + overhead_s +
           port_shared_s + p2p_exposed_s + bubble_s + dp_sync_s + optimizer_s;
  }
};

// What one step's pipeline took, from two replays of the same schedule and
// costs: as simulated, and with every stage-to-stage transfer instant.
struct PipelineTimes {
  double pipeline_s = 0;
  double without_p2p_s = 0;
  double gradient_sync_s = 0;
  double optimizer_s = 0;
  std::vector<double> expert_comm_s;  // per rank: exposed (ModelSimulation's)
  std::vector<double> port_shared_s;  // per rank (ModelSimulation's)
};

// Per rank: its busy time (from `report`) divided over the kinds of work in
// the proportions the time model gives its layers (`layers` costed on
// `hardware` at `shape`, placed by `split` and the schedule's stage-to-rank
// map), then its idle time and the step's overhead.
std::vector<StepTerms> step_terms(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                                  const models::TrainingShape& shape, const StageSplit& split,
                                  const sim::Schedule& schedule, const sim::SimulationReport& report,
                                  const PipelineTimes& times);

}  // namespace pipeplan::step
