#include "planner/goodput/goodput_objective.h"

#include <cmath>

#include "common/error.h"
#include "planner/goodput/checkpoint.h"
#include "planner/goodput/goodput.h"

namespace pipeplan::planner {
void add_goodput(const step::ModelSimulation& simulation, const PlanRequest& request, PlanCandidate& candidate) {
  RunInputs inputs;
  inputs.step_s = simulation.iteration_time_s;
  inputs.tokens_per_step = static_cast<double>(request.global_batch) * request.seq_len;
  inputs.gpus = request.gpus;
  inputs.nodes = job_nodes(request.gpus, request.hardware.gpus_per_node);
  inputs.checkpoint = checkpoint_cost(
      {simulation.memory, candidate.tp, candidate.cp, candidate.dp, candidate.pp, candidate.zero}, request.hardware);
  inputs.reliability = request.hardware.reliability;
  try {
    const GoodputEstimate estimate = estimate_goodput(inputs);
    candidate.goodput = estimate.goodput;
  } catch (const InputError&) {
    candidate.goodput = 0;  // its job cannot progress: it trains nothing
  }
  candidate.effective_tokens_per_s = candidate.tokens_per_s * candidate.goodput;
}

double goodput_ceiling(const PlanRequest& request) {
  const models::ReliabilityConfig& reliability = request.hardware.reliability;
  const double mtbf = job_mtbf_s(reliability, request.gpus, job_nodes(request.gpus, request.hardware.gpus_per_node));
  return std::exp(-(reliability.relaunch_s + reliability.init_s) / mtbf);
}

}  // namespace pipeplan::planner
