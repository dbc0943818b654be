// A schedule is data: one ordered action list per pipeline rank, plus the
// mapping of stages (model chunks) to ranks. Generators make them, the
// lowering pass adds communication, validation checks them, the engine
// replays them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sim/action.h"

namespace pipeplan::sim {

// The most compute actions a schedule may hold (generated or read): about
// 1.5 GB and a few seconds for `simulate`; beyond it a request is refused
// before anything is built.
inline constexpr double kMaxComputeActions = 5e7;

// How stages are placed on ranks when each rank holds v chunks.
enum class StagePlacement {
  kLoop,  // stage s on rank s % p (Megatron interleaving, LoopedBFS)
  kV,     // chunks zig-zag: even chunks go 0..p-1, odd chunks p-1..0 (ZBV, DualPipeV)
};

struct Schedule {
  std::string name;
  int ranks = 0;
  int stages = 0;
  int microbatches = 0;
  std::vector<int> stage_to_rank;           // size `stages`
  std::vector<std::vector<Action>> actions;  // per rank, in execution order
  // How many of the user's micro-batches one schedule micro-batch carries.
  // 1 except for the naive schedule, which runs the whole batch as one.
  double microbatch_scale = 1.0;
  // Idle cells a PyTorch compute-only CSV had before each action, per rank
  // (idle_slots[rank][i] before action i, the last entry after the last
  // action); empty when none were read. Only PyTorch's lowering reads
  // them: there an idle cell takes a round.
  std::vector<std::vector<int>> idle_slots;
  // UNSHARD, RESHARD and REDUCE_GRAD cells read from a CSV and dropped:
  // FSDP and per-stage gradient reduction cost nothing here.
  std::size_t dropped_runtime_actions = 0;

  int virtual_stages() const { return ranks > 0 ? stages / ranks : 0; }
  int rank_of(int stage) const { return stage_to_rank[static_cast<std::size_t>(stage)]; }
  std::size_t action_count() const;
  std::size_t compute_action_count() const;
  // True when the schedule carries SEND/RECV actions (the lowered form).
  bool has_comm() const;
};

std::vector<int> stage_to_rank_mapping(int ranks, int virtual_stages, StagePlacement placement);
// "loop", "v" or "custom", read back from a mapping.
std::string_view placement_name(const std::vector<int>& stage_to_rank, int ranks);

}  // namespace pipeplan::sim
