#include "planner/goodput/checkpoint.h"

#include <algorithm>


namespace pipeplan::planner {
namespace {

// The time to move `per_node` bytes from every node and `total` in all:
// the slower of the node's rate and the storage's (0: no limit).
double storage_s(double per_node, double total, double node_rate, double total_rate) {
  return std::max(per_node / node_rate, total_rate > 0 ? total / total_rate : 0.0);
}

}  // namespace

CheckpointCost checkpoint_cost(const CheckpointLayout& layout, const models::HardwareConfig& hardware) {
  const models::ReliabilityConfig& reliability = hardware.reliability;
  // The d x c replicas of a rank hold the same weights (ZeRO-3 on one
  // stage shards them) and, without the distributed optimizer, the same
  // optimizer state: each writes its share of what they hold alike.
  const double replicas = static_cast<double>(layout.dp) * layout.cp;
  const bool weights_sharded = layout.zero == models::ZeroStage::kWeights && layout.pp == 1;
  const bool optimizer_sharded = layout.zero != models::ZeroStage::kNone;
  const double gpus_per_rank = static_cast<double>(layout.tp) * replicas;
  CheckpointCost cost;
  for (const step::MemoryBreakdown& rank : layout.ranks) {
    const auto weights = static_cast<double>(rank.weights), optimizer = static_cast<double>(rank.optimizer);
    const double written = weights / (weights_sharded ? 1 : replicas) + optimizer / (optimizer_sharded ? 1 : replicas);
    cost.write_bytes_per_gpu = std::max(cost.write_bytes_per_gpu, written);
    cost.read_bytes_per_gpu = std::max(cost.read_bytes_per_gpu, weights + optimizer);
    cost.state_bytes += written * gpus_per_rank;
  }
  double loaded = 0;
  for (const step::MemoryBreakdown& rank : layout.ranks) {
    loaded += static_cast<double>(rank.weights + rank.optimizer) * gpus_per_rank;
  }
  const double gpus_per_node = hardware.gpus_per_node;
  // A node moves no more than its network ports carry, unless told less.
  const double ports = hardware.network.bandwidth * gpus_per_node;
  const auto node_rate = [&](double given) { return given > 0 ? given : ports; };
  cost.write_s = storage_s(gpus_per_node * cost.write_bytes_per_gpu, cost.state_bytes,
                           node_rate(reliability.storage_write_per_node), reliability.storage_write_total);
  cost.read_s = storage_s(gpus_per_node * cost.read_bytes_per_gpu, loaded, node_rate(reliability.storage_read_per_node),
                          reliability.storage_read_total);
  if (hardware.host_link.bandwidth > 0) {
    cost.snapshot_s = hardware.host_link.latency_s + cost.write_bytes_per_gpu / hardware.host_link.bandwidth;
  }
  cost.snapshot_bytes_per_node = gpus_per_node * cost.write_bytes_per_gpu;
  return cost;
}

}  // namespace pipeplan::planner
