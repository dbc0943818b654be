#include "step/step_overhead.h"

#include <algorithm>
#include <array>

#include "models/time_model.h"
#include "models/training_state.h"
#include "sim/port_sharing.h"

namespace pipeplan::step {
namespace {

// The ranks holding the same weights and how far apart they are: the
// dense weights' d x c replicas (t apart), or the routed experts' expert
// data-parallel replicas (ep x etp apart, Megatron's expert rank order).
struct ReplicaGroup {
  int ranks = 1;
  int stride = 1;
};
ReplicaGroup dense_group(const models::TrainingShape& shape) {
  return {shape.weight_replicas(), shape.replica_stride()};
}
ReplicaGroup expert_group(const models::TrainingShape& shape) {
  return {shape.expert_replicas(), shape.ep * shape.expert_tp()};
}

// Megatron reduces gradients over the data-parallel group (with context
// parallelism, its d x c ranks holding the same weights, t apart): an all-reduce of
// the gradient buffers (fp32, or bf16 with --grad-reduce-in-bf16), or with
// the distributed optimizer a reduce-scatter of them and, after the
// optimizer, an all-gather of the bf16 weights.
double group_reduce_s(double params, ReplicaGroup group, const models::HardwareConfig& hardware,
                      const models::TrainingShape& shape) {
  if (group.ranks <= 1 || params <= 0) return 0;
  const models::LinkSpec link = models::link_for_group(hardware, group.ranks, group.stride);
  const double bytes = shape.gradient_bytes() * params;
  if (shape.zero == models::ZeroStage::kNone) return models::all_reduce_s(bytes, group.ranks, link);
  // ZeRO-2/3 unpipelined reduce-scatter each micro-batch's gradients in its
  // backward; pipelined, once per step as the distributed optimizer does.
  return shape.shards_once_per_step() ? models::reduce_scatter_s(bytes, group.ranks, link) : 0;
}

// `params` of which `fp8` FP8 layers' weights: with --fp8-param-gather
// those travel in 1 byte, the rest in bf16.
double group_gather_s(double params, double fp8, ReplicaGroup group, const models::HardwareConfig& hardware,
                      const models::TrainingShape& shape) {
  // The updated shards gathered once per step; ZeRO-3 unpipelined gathers
  // the weights where each layer needs them instead.
  const bool per_layer = shape.zero == models::ZeroStage::kWeights && !shape.pipelined;
  if (group.ranks <= 1 || params <= 0 || shape.zero == models::ZeroStage::kNone || per_layer) return 0;
  const double bytes = 2 * params - (shape.runtime.fp8_param_gather ? fp8 : 0);
  return models::all_gather_s(bytes, group.ranks, models::link_for_group(hardware, group.ranks, group.stride));
}

// The dense weights' and the experts' buffers, one after the other.
double gradient_reduce_s(RankParams params, const models::HardwareConfig& hardware,
                         const models::TrainingShape& shape) {
  return group_reduce_s(params.all - params.expert, dense_group(shape), hardware, shape) +
         group_reduce_s(params.expert, expert_group(shape), hardware, shape);
}
double param_gather_s(RankParams params, const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  // Every routed expert's weight is an FP8 layer's where any is.
  const double expert_fp8 = std::min(params.fp8, params.expert);
  return group_gather_s(params.all - params.expert, params.fp8 - expert_fp8, dense_group(shape), hardware, shape) +
         group_gather_s(params.expert, expert_fp8, expert_group(shape), hardware, shape);
}

// Not overlapped, the whole synchronisation waits for the pipeline; the
// overlapped parts are bounded below by nothing.
double gradient_sync_s(RankParams params, const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  return (shape.runtime.overlap_grad_reduce ? 0 : gradient_reduce_s(params, hardware, shape)) +
         (shape.runtime.overlap_param_gather ? 0 : param_gather_s(params, hardware, shape));
}

// A share of a chunk's parameters and when it is ready to reduce (its
// gradients final) or needed (its first forward starts).
struct SyncPiece {
  double at_s = 0;
  RankParams params;
};

// Megatron reduces and gathers in buckets of a few layers; here one piece
// per layer. The last backward of a chunk finishes its layers' gradients
// last layer first, evenly over the pass; its first forward needs them
// first layer first.
void add_pieces(std::vector<SyncPiece>& reduce, std::vector<SyncPiece>& gather, const sim::SimulationReport& report,
                const sim::Schedule& schedule, const ModelStageCosts& costs, const StageSplit& split, int stage) {
  const auto index = static_cast<std::size_t>(stage);
  const sim::StageCost& cost = costs.costs.stages[index];
  const bool split_weights = std::any_of(schedule.actions[static_cast<std::size_t>(schedule.rank_of(stage))].begin(),
                                         schedule.actions[static_cast<std::size_t>(schedule.rank_of(stage))].end(),
                                         [](const sim::Action& a) { return a.kind == sim::OpKind::kBackwardWeight; });
  const double backward = split_weights ? cost.backward_weight_s : cost.backward_input_s + cost.backward_weight_s;
  const int layers = std::max(1, split.end_layer(stage) - split.first_layer(stage));
  const RankParams& stage_params = costs.stage_params[index];
  const RankParams share{stage_params.all / layers, stage_params.expert / layers, stage_params.fp8 / layers};
  for (int k = 0; k < layers; ++k) {
    reduce.push_back({report.stage_grads_ready_s[index] - backward * (layers - 1 - k) / layers, share});
    gather.push_back({report.stage_first_forward_s[index] + cost.forward_s * k / layers, share});
  }
}

// Adam reads and writes its state (the fp32 master weights and both
// moments: 24 bytes per parameter, 16 with bf16 moments), reads and writes
// the gradients (8 in fp32, 4 in bf16) and writes the bf16 weights (2).
double optimizer_step_s(RankParams params, const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  const bool sharded = shape.zero != models::ZeroStage::kNone;
  const double stepped =
      sharded ? (params.all - params.expert) / shape.weight_replicas() + params.expert / shape.expert_replicas()
              : params.all;
  const double bytes = stepped * (2 * models::optimizer_bytes_per_param(shape.runtime) + 2 + 2 * shape.gradient_bytes());
  return bytes / (hardware.gpu.memory_bandwidth * hardware.gpu.memory.at(bytes));
}

// The network messages a rank sends (direction 0) and receives (1) once
// one of its chunks' gradients are final: each placed at the ready time of
// the latest chunk whose final backward comes before it in the rank's
// order. That is no later than it is sent, so the port's finish computed
// from them is a lower bound.
struct PortMessage {
  double at_s = 0;
  double seconds = 0;
};
std::array<std::vector<PortMessage>, 2> messages_after_grads(const sim::SimulationReport& report,
                                                             const sim::Schedule& schedule,
                                                             const ModelStageCosts& costs,
                                                             const sim::Topology& topology, int rank) {
  const std::vector<sim::Action>& actions = schedule.actions[static_cast<std::size_t>(rank)];
  std::vector<std::size_t> final_backward(static_cast<std::size_t>(schedule.stages), actions.size());
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const sim::OpKind kind = actions[k].kind;
    if (kind == sim::OpKind::kBackward || kind == sim::OpKind::kBackwardWeight) {
      final_backward[static_cast<std::size_t>(actions[k].stage)] = k;
    }
  }
  // Per action: the ready time of the chunk whose final backward it is (-1: none).
  std::vector<double> readies_at(actions.size(), -1);
  for (std::size_t stage = 0; stage < final_backward.size(); ++stage) {
    if (final_backward[stage] < actions.size()) readies_at[final_backward[stage]] = report.stage_grads_ready_s[stage];
  }
  const auto boundary_s = [&](int stage) {
    return stage >= 0 && stage + 1 < schedule.stages ? sim::boundary_network_s(schedule, costs.costs, topology, stage)
                                                     : 0.0;
  };
  std::array<std::vector<PortMessage>, 2> messages;
  double ready = -1;  // none final yet
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const sim::Action& action = actions[k];
    const bool forward = action.kind == sim::OpKind::kForward;
    const bool input_grad = action.kind == sim::OpKind::kBackward || action.kind == sim::OpKind::kBackwardInput;
    const bool received_before = ready >= 0;  // its input came after an earlier final backward
    ready = std::max(ready, readies_at[k]);
    if (ready < 0 || !(forward || input_grad)) continue;
    // A forward sends across the boundary after its stage and receives
    // across the one before; an input gradient the other way round.
    const double sent = boundary_s(forward ? action.stage : action.stage - 1);
    const double received = boundary_s(forward ? action.stage - 1 : action.stage);
    if (sent > 0) messages[0].push_back({ready, sent});
    if (received > 0 && received_before) messages[1].push_back({ready, received});
  }
  return messages;
}

// Whether the rank's gradient reduction runs over the network.
bool reduces_over_network(const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  for (const ReplicaGroup group : {dense_group(shape), expert_group(shape)}) {
    if (group.ranks > 1 && !models::on_node_link(hardware, static_cast<long long>(group.ranks) * group.stride)) {
      return true;
    }
  }
  return false;
}

// When the port has carried every reduction piece and, sharing it, every
// message: one at a time, each once it is there.
double port_finish_s(const std::vector<SyncPiece>& pieces, const std::vector<double>& piece_s,
                     const std::vector<PortMessage>& messages) {
  std::vector<PortMessage> work;
  for (std::size_t i = 0; i < pieces.size(); ++i) work.push_back({pieces[i].at_s, piece_s[i]});
  work.insert(work.end(), messages.begin(), messages.end());
  std::stable_sort(work.begin(), work.end(), [](const PortMessage& a, const PortMessage& b) { return a.at_s < b.at_s; });
  double free = 0;
  for (const PortMessage& item : work) free = std::max(free, item.at_s) + item.seconds;
  return free;
}

}  // namespace

StepOverhead step_overhead(const ModelStageCosts& costs, const models::HardwareConfig& hardware,
                           const models::TrainingShape& shape) {
  StepOverhead overhead;
  for (const StaticMemory& memory : costs.static_memory) {
    const StepOverhead rank = rank_step_overhead(
        {static_cast<double>(memory.params), static_cast<double>(memory.expert_params),
         static_cast<double>(memory.fp8_params)},
        hardware, shape);
    overhead.gradient_sync_s = std::max(overhead.gradient_sync_s, rank.gradient_sync_s);
    overhead.optimizer_step_s = std::max(overhead.optimizer_step_s, rank.optimizer_step_s);
  }
  return overhead;
}

StepOverhead rank_step_overhead(RankParams params, const models::HardwareConfig& hardware,
                                const models::TrainingShape& shape) {
  return {gradient_sync_s(params, hardware, shape), optimizer_step_s(params, hardware, shape)};
}

double overlapped_sync_s(const sim::SimulationReport& report, const sim::Schedule& schedule,
                         const ModelStageCosts& costs, const StageSplit& split,
                         const std::vector<RankPlatform>& platforms, const sim::Topology& topology) {
  double pipeline_end = 0;
  for (const sim::RankReport& rank : report.ranks_detail) pipeline_end = std::max(pipeline_end, rank.last_end_s);
  const auto by_time = [](const SyncPiece& a, const SyncPiece& b) { return a.at_s < b.at_s; };
  double reduce_exposed = 0, gather_exposed = 0, contention = 0;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const models::HardwareConfig& hardware = *platforms[static_cast<std::size_t>(rank)].hardware;
    const models::TrainingShape& shape = platforms[static_cast<std::size_t>(rank)].shape;
    double rank_contention = 0;
    std::vector<SyncPiece> reduce, gather;
    for (int stage = 0; stage < schedule.stages; ++stage) {
      if (schedule.rank_of(stage) == rank) add_pieces(reduce, gather, report, schedule, costs, split, stage);
    }
    if (shape.runtime.overlap_grad_reduce) {
      // Each piece goes on the data-parallel link (one at a time) once its
      // gradients are final; what is still running when the pipeline ends
      // is exposed. Over the network each direction of the port carries
      // the pieces and that direction's messages.
      std::stable_sort(reduce.begin(), reduce.end(), by_time);
      std::vector<double> seconds;
      double busy = 0;
      for (const SyncPiece& piece : reduce) {
        seconds.push_back(gradient_reduce_s(piece.params, hardware, shape));
        busy += seconds.back();
      }
      double finish = port_finish_s(reduce, seconds, {});
      if (reduces_over_network(hardware, shape)) {
        for (const std::vector<PortMessage>& way : messages_after_grads(report, schedule, costs, topology, rank)) {
          finish = std::max(finish, port_finish_s(reduce, seconds, way));
        }
      }
      const double exposed = std::max(0.0, finish - pipeline_end);
      reduce_exposed = std::max(reduce_exposed, exposed);
      rank_contention += models::contention_s(std::max(0.0, busy - exposed), hardware.gpu);
    }
    if (shape.runtime.overlap_param_gather) {
      // Issued at the step's start, one at a time in the order the forward
      // needs them; the step waits for the latest one a forward needs. (The
      // first forward waits for its own gather before any message.)
      std::stable_sort(gather.begin(), gather.end(), by_time);
      double gathered = 0, exposed = 0;
      for (const SyncPiece& piece : gather) {
        gathered += param_gather_s(piece.params, hardware, shape);
        exposed = std::max(exposed, gathered - piece.at_s);
      }
      gather_exposed = std::max(gather_exposed, exposed);
      rank_contention += models::contention_s(std::max(0.0, gathered - exposed), hardware.gpu);
    }
    contention = std::max(contention, rank_contention);
  }
  // The compute the hidden part ran beside was slowed by the SMs it held.
  return reduce_exposed + gather_exposed + contention;
}

}  // namespace pipeplan::step
