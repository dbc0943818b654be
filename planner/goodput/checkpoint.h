// What saving and loading a plan's training state costs: every rank's
// weights and optimizer state (not its gradients), each replica's share
// written once (the replicas holding the same bytes split the writing, as
// Megatron's fully parallel save does), all stages at the same iteration.
#pragma once

#include <vector>

#include "models/hardware.h"
#include "models/training_shape.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

// How the plan's ranks hold their state: per pipeline rank its memory
// breakdown, and how many GPUs hold each pipeline rank's bytes.
struct CheckpointLayout {
  std::vector<step::MemoryBreakdown> ranks;  // per pipeline rank (one GPU of it)
  int tp = 1, cp = 1, dp = 1, pp = 1;
  models::ZeroStage zero = models::ZeroStage::kNone;
};

struct CheckpointCost {
  double state_bytes = 0;          // the job's state, saved once
  double write_bytes_per_gpu = 0;  // the most one GPU writes
  double read_bytes_per_gpu = 0;   // the most one GPU loads: its whole state
  double write_s = 0;              // a synchronous save: the slowest node, or the storage in all
  double read_s = 0;               // the load on a restart
  // An asynchronous save: the device-to-host copy the step waits for (0:
  // no host link described), and what a node's host memory then holds.
  double snapshot_s = 0;
  double snapshot_bytes_per_node = 0;
};

CheckpointCost checkpoint_cost(const CheckpointLayout& layout, const models::HardwareConfig& hardware);

}  // namespace pipeplan::planner
