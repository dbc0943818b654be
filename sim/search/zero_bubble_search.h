// A zero-bubble schedule searched for given stage costs under a memory
// limit per rank, after Zero Bubble's automatic scheduling (Qi et al.,
// ICLR 2024, Sec. 3.1): each rank warms up with as many forwards as its
// memory allows and its first input-gradient backward needs, then
// alternates I and F, filling the waits before each with weight
// gradients (W), and runs W early where the memory limit asks for it. The
// heuristic's eight variants are built and, where memory binds, 1F1B's
// split-backward orders holding 1 to p micro-batches beside them; each is
// replayed on the engine and the fastest that keeps every rank within its
// limit is returned: a plain Schedule that validation, the engine, the
// CSV writer and the planner take as any other.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/costs.h"
#include "sim/schedule.h"
#include "sim/simulate.h"
#include "sim/topology.h"

namespace pipeplan::sim {

struct ZeroBubbleSearchRequest {
  int microbatches = 0;
  // One stage per rank (v = 1): F, I and W times, M_B and M_W, the
  // messages' bytes.
  PipelineCosts costs;
  Topology topology;
  // Activation bytes each rank may hold at once (one value for every rank,
  // or one per rank), at least one micro-batch's M_B.
  std::vector<std::int64_t> memory_limit_bytes;
};

struct SearchedSchedule {
  Schedule schedule;
  SimulationReport report;  // the engine's replay of it
  int variants_tried = 0;
};

// Throws InputError naming what is wrong: no ranks or micro-batches, a
// time that is not > 0, a limit below one micro-batch's activations on a
// rank, or no variant within the limits.
SearchedSchedule search_zero_bubble(const ZeroBubbleSearchRequest& request);

// The request checks search_zero_bubble makes (every search takes them).
void check_search_request(const ZeroBubbleSearchRequest& request);

// The memory limit of `rank` (one value for all, or one per rank).
std::int64_t rank_memory_limit(const ZeroBubbleSearchRequest& request, int rank);

}  // namespace pipeplan::sim
