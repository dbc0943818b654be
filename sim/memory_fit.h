// Whether every rank's peak memory fits the memory it may use, and by how
// much the ranks that do not fit exceed it. Every output of a simulation
// (text, JSON, study rows, charts) says it from here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/simulate.h"

namespace pipeplan::sim {

struct RankOverMemory {
  int rank = 0;
  std::int64_t peak_memory_bytes = 0;
  std::int64_t over_by_bytes = 0;
};

// The ranks whose peak exceeds the report's memory limit, in rank order;
// none when the report has no limit.
std::vector<RankOverMemory> ranks_over_memory(const SimulationReport& report);

// True when the report has a limit and every rank stays within it.
bool fits_memory(const SimulationReport& report);

// "76.00 GiB per rank (usable memory per GPU of h100-sxm): rank 0 needs
// 759.28 GiB (683.28 GiB over), rank 1 ..." or empty when it fits or there
// is no limit.
std::string memory_overflow_text(const SimulationReport& report);

}  // namespace pipeplan::sim
