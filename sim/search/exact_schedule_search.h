// The fastest per-rank order of F, I and W for given stage costs under a
// memory limit, found by branch and bound over every order (small p and m
// only): the yardstick the zero-bubble heuristic's gap is measured against.
#pragma once

#include <cstdint>

#include "sim/search/zero_bubble_search.h"

namespace pipeplan::sim {

struct ExactSearchResult {
  Schedule schedule;
  double cost_s = 0;       // the longest rank span (first start to last end), as the engine reports it
  bool proven = false;     // every order was covered (false: the node budget ran out first)
  std::int64_t nodes = 0;  // partial orders visited
};

// Ops are placed in order of start time (ties by rank), each at the
// earliest its rank and its input allow, so each complete order is met
// once; a branch ends where its ranks' remaining work cannot beat the best
// order found, starting from `upper_bound_s` (e.g. the heuristic's; an
// order must be strictly faster to replace it). Stops after `max_nodes`.
// Returns the best order found, or an empty schedule (ranks 0) when none
// beat the bound. Throws InputError as search_zero_bubble does.
ExactSearchResult search_exact_schedule(const ZeroBubbleSearchRequest& request, double upper_bound_s,
                                        std::int64_t max_nodes);

}  // namespace pipeplan::sim
