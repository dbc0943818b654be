#include "step/step_terms.h"

#include <algorithm>

#include "models/time_model.h"

namespace pipeplan::step {
namespace {

models::PassTerms& operator+=(models::PassTerms& sum, const models::PassTerms& pass) {
  sum.gemm_s += pass.gemm_s;
  sum.attention_s += pass.attention_s;
  sum.elementwise_s += pass.elementwise_s;
  sum.tp_comm_s += pass.tp_comm_s;
  sum.cp_comm_s += pass.cp_comm_s;
  sum.shard_comm_s += pass.shard_comm_s;
  sum.expert_gemm_s += pass.expert_gemm_s;
  sum.routing_s += pass.routing_s;
  return sum;
}

// One micro-batch's F, I and W over every layer the rank holds.
models::PassTerms rank_work(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                            const models::TrainingShape& shape, const StageSplit& split, const sim::Schedule& schedule,
                            int rank) {
  models::PassTerms sum;
  for (int stage = 0; stage < split.stages(); ++stage) {
    if (schedule.rank_of(stage) != rank) continue;
    for (int layer = split.first_layer(stage); layer < split.end_layer(stage); ++layer) {
      const models::LayerCost& cost = layers.layers[static_cast<std::size_t>(layer)];
      for (const models::PassWork* pass : {&cost.forward, &cost.backward_input, &cost.backward_weight}) {
        sum += models::pass_terms(*pass, hardware, shape);
      }
    }
  }
  return sum;
}

// What each stage's forward and input-gradient pass spends outside its
// kernels, as the stage costs charge it (step/stage_costs.cc).
std::vector<models::LayerOverheads> stage_overheads(const models::ModelLayers& layers,
                                                    const models::HardwareConfig& hardware,
                                                    const models::TrainingShape& shape, const StageSplit& split) {
  std::vector<models::LayerOverheads> stages(static_cast<std::size_t>(split.stages()));
  for (int stage = 0; stage < split.stages(); ++stage) {
    models::LayerOverheads& sum = stages[static_cast<std::size_t>(stage)];
    sum = {hardware.pass_overhead_s, hardware.pass_overhead_s};
    for (int layer = split.first_layer(stage); layer < split.end_layer(stage); ++layer) {
      const models::LayerCost& cost = layers.layers[static_cast<std::size_t>(layer)];
      const models::LayerOverheads own =
          models::layer_overheads(cost, models::layer_times(cost, hardware, shape), hardware, shape);
      sum.forward_s += own.forward_s;
      sum.backward_s += own.backward_s;
      sum.forward_host_s += own.forward_host_s;
      sum.backward_host_s += own.backward_host_s;
    }
  }
  return stages;
}

// The rank's share: its forwards and input-gradient passes, and of them
// the passes waiting on the host.
struct RankOverhead {
  double total_s = 0;
  double host_s = 0;
};
RankOverhead rank_overhead(const std::vector<models::LayerOverheads>& stages, const sim::Schedule& schedule,
                           int rank) {
  RankOverhead sum;
  for (const sim::Action& action : schedule.actions[static_cast<std::size_t>(rank)]) {
    const models::LayerOverheads& stage = stages[static_cast<std::size_t>(action.stage)];
    if (action.kind == sim::OpKind::kForward) {
      sum.total_s += stage.forward_s;
      sum.host_s += stage.forward_host_s;
    }
    if (sim::produces_input_grad(action.kind)) {
      sum.total_s += stage.backward_s;
      sum.host_s += stage.backward_host_s;
    }
  }
  return sum;
}

}  // namespace

std::vector<StepTerms> step_terms(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                                  const models::TrainingShape& shape, const StageSplit& split,
                                  const sim::Schedule& schedule, const sim::SimulationReport& report,
                                  const PipelineTimes& times) {
  std::vector<StepTerms> result;
  const std::vector<models::LayerOverheads> overheads = stage_overheads(layers, hardware, shape, split);
  for (const sim::RankReport& rank : report.ranks_detail) {
    const models::PassTerms work = rank_work(layers, hardware, shape, split, schedule, rank.rank);
    // The replay's busy time, less its passes' overhead, in the time model's
    // proportions: the same seconds, summed per stage and micro-batch in the
    // replay's order.
    StepTerms terms;
    terms.rank = rank.rank;
    const RankOverhead overhead = rank_overhead(overheads, schedule, rank.rank);
    terms.overhead_s = std::min(rank.busy_s, overhead.total_s);
    terms.moe_host_s = std::min(terms.overhead_s, overhead.host_s);
    // The experts' communication as the replay left it exposed; the rest of
    // the busy time in the other terms' proportions.
    const auto index = static_cast<std::size_t>(rank.rank);
    terms.expert_comm_s = index < times.expert_comm_s.size()
                              ? std::clamp(times.expert_comm_s[index], 0.0, rank.busy_s - terms.overhead_s)
                              : 0.0;
    terms.port_shared_s =
        index < times.port_shared_s.size()
            ? std::clamp(times.port_shared_s[index], 0.0, rank.busy_s - terms.overhead_s - terms.expert_comm_s)
            : 0.0;
    const double total = work.total_s() - work.expert_comm_s;
    const double scale =
        total > 0 ? (rank.busy_s - terms.overhead_s - terms.expert_comm_s - terms.port_shared_s) / total : 0;
    terms.gemm_s = work.gemm_s * scale;
    terms.attention_s = work.attention_s * scale;
    terms.elementwise_s = work.elementwise_s * scale;
    terms.tp_comm_s = work.tp_comm_s * scale;
    terms.cp_comm_s = work.cp_comm_s * scale;
    terms.shard_comm_s = work.shard_comm_s * scale;
    terms.expert_gemm_s = work.expert_gemm_s * scale;
    terms.routing_s = work.routing_s * scale;
    // Idle time: what instant transfers would save (never more than the
    // rank idles), the rest the schedule's bubble.
    const double idle = std::max(0.0, times.pipeline_s - rank.busy_s);
    terms.p2p_exposed_s = std::clamp(times.pipeline_s - times.without_p2p_s, 0.0, idle);
    terms.bubble_s = idle - terms.p2p_exposed_s;
    terms.dp_sync_s = times.gradient_sync_s;
    terms.optimizer_s = times.optimizer_s;
    result.push_back(terms);
  }
  return result;
}

}  // namespace pipeplan::step
