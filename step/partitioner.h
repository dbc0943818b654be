// Partitioners: which contiguous runs of layers each pipeline stage holds.
//   uniform     blocks as even as counts allow (Megatron's even split when
//               they divide; otherwise the first stages take one more, as
//               DeepSpeed's partition_uniform)
//   parameters  the largest stage's parameter count as small as possible
//               (DeepSpeed's "parameters" method)
//   time        the slowest stage (F + B + W) as fast as possible
//   memory      the slowest stage as fast as possible with every stage's peak
//               memory under the cap, the peak depending on the stage's
//               position in the schedule
// The last three are exact: a dynamic programme over (stage, boundary)
// whose inner minimum is found by binary search, since the best cost of the
// first k stages only grows with their layers and a stage's cost only
// shrinks as its first layer moves right. O(S n log n) for S stages and n
// layers; memory feasibility is a suffix of start positions, tracked with a
// moving pointer.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "step/stage_split.h"

namespace pipeplan::step {

enum class PartitionMethod { kUniform, kParameters, kTime, kMemory };

PartitionMethod parse_partition_method(std::string_view text);
std::string_view partition_method_name(PartitionMethod method);

struct PartitionProblem {
  int layers = 0;  // n, the embedding first and the output layer last
  int stages = 0;  // S
  // Cost of stage `stage` holding layers [i, j); grows with the run.
  std::function<double(int stage, int i, int j)> cost;
  // Whether stage `stage` may hold [i, j) (a memory cap, say); must stay
  // true when the run shrinks. Unset: every run fits.
  std::function<bool(int stage, int i, int j)> fits;
};

// Every stage holds at least one layer; the output layer is on the last.
// nullopt when no split fits (or S > n).
std::optional<StageSplit> min_max_partition(const PartitionProblem& problem);

// The memory-aware partitioner: the smallest slowest-stage time T with
// every stage's memory under the cap, then, among the splits whose slowest
// stage stays within T (1 + time_slack), the one whose largest stage memory
// is smallest (two exact passes). Stage memory must not grow with the
// stage's position (true for one chunk per rank: later stages hold fewer
// micro-batches).
std::optional<StageSplit> memory_aware_partition(int layers, int stages,
                                                 const std::function<double(int i, int j)>& time,
                                                 const std::function<double(int stage, int i, int j)>& memory,
                                                 double cap, double time_slack);

// Blocks as even as possible, the first stages taking the remainder.
StageSplit uniform_split(int transformer_layers, int stages);

}  // namespace pipeplan::step
