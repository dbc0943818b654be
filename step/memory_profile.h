// How a schedule fills each rank's activation memory, independent of the
// costs: at every point where a forward starts (where peaks happen), the
// number of micro-batches holding their full activations (M_B) and the
// number holding only what W still needs (M_W), per chunk of the rank. A
// rank's peak is then max over those points of sum_c a_c M_B(c) + w_c M_W(c),
// exactly what the simulator's memory tracking gives, but computable for any
// split without replaying the schedule.
#pragma once

#include <vector>

#include "sim/schedule.h"

namespace pipeplan::step {

struct MemoryPoint {
  std::vector<int> full;     // per chunk of the rank: micro-batches holding M_B
  std::vector<int> partial;  // per chunk: micro-batches holding M_W
};

struct RankMemoryProfile {
  std::vector<int> stages;           // the rank's stages, chunk order
  std::vector<MemoryPoint> points;   // no point dominated by another
};

std::vector<RankMemoryProfile> memory_profiles(const sim::Schedule& schedule);

// The rank's peak activation bytes for per-chunk M_B and M_W.
double peak_activation_bytes(const RankMemoryProfile& profile, const std::vector<double>& full_bytes,
                             const std::vector<double>& partial_bytes);

}  // namespace pipeplan::step
