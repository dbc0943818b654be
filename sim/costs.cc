#include "sim/costs.h"

#include <fmt/format.h>

#include <cmath>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

template <typename T>
T rank_value(const std::vector<T>& values, int rank, int ranks, std::string_view option) {
  if (values.size() == 1) return values.front();
  if (values.size() != static_cast<std::size_t>(ranks)) {
    throw InputError(fmt::format("--{} lists {} values but there are {} ranks: give one value or {}", option,
                                 values.size(), ranks, ranks));
  }
  return values[static_cast<std::size_t>(rank)];
}

std::int64_t scale_bytes(std::int64_t bytes, double factor) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) * factor));
}

}  // namespace

PipelineCosts expand_rank_costs(const RankCosts& costs, const Schedule& schedule) {
  PipelineCosts expanded;
  const int ranks = schedule.ranks;
  const double chunks = schedule.virtual_stages();
  const double scale = schedule.microbatch_scale;
  expanded.stages.resize(static_cast<std::size_t>(schedule.stages));
  for (int stage = 0; stage < schedule.stages; ++stage) {
    const int rank = schedule.rank_of(stage);
    StageCost& cost = expanded.stages[static_cast<std::size_t>(stage)];
    cost.forward_s = rank_value(costs.forward_s, rank, ranks, "tf") * scale / chunks;
    cost.backward_input_s = rank_value(costs.backward_input_s, rank, ranks, "tb") * scale / chunks;
    cost.backward_weight_s = rank_value(costs.backward_weight_s, rank, ranks, "tw") * scale / chunks;
    const std::int64_t activation = rank_value(costs.activation_bytes, rank, ranks, "act-bytes");
    const std::int64_t weight_grad = rank_value(costs.weight_grad_bytes, rank, ranks, "wgrad-bytes");
    if (weight_grad > activation) {
      throw InputError(fmt::format("--wgrad-bytes ({}) exceeds --act-bytes ({}) on rank {}: M_W is the part of "
                                   "M_B kept until W, so it cannot be larger",
                                   weight_grad, activation, rank));
    }
    cost.activation_bytes = scale_bytes(activation, scale / chunks);
    cost.weight_grad_bytes = scale_bytes(weight_grad, scale / chunks);
    cost.send_bytes = scale_bytes(rank_value(costs.send_bytes, rank, ranks, "p2p-bytes"), scale);
  }
  expanded.static_bytes.resize(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    expanded.static_bytes[static_cast<std::size_t>(rank)] = rank_value(costs.static_bytes, rank, ranks, "static-bytes");
  }
  return expanded;
}

double action_duration_s(const StageCost& cost, OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return cost.forward_s;
    case OpKind::kBackward: return cost.backward_input_s + cost.backward_weight_s;
    case OpKind::kBackwardInput: return cost.backward_input_s;
    case OpKind::kBackwardWeight: return cost.backward_weight_s;
    default: return 0.0;
  }
}

}  // namespace pipeplan::sim
