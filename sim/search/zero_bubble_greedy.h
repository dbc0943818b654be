// Zero Bubble's greedy order (Qi et al., ICLR 2024, Sec. 3.1) for one
// setting of its three choices: the per-rank order of F, I and W for given
// stage costs under a memory limit, with each op's start estimated as it is
// placed. zero_bubble_search.h tries every setting and keeps the fastest
// replay.
#pragma once

#include <optional>

#include "sim/schedule.h"
#include "sim/search/zero_bubble_search.h"

namespace pipeplan::sim::detail {

struct GreedyChoices {
  // Warm-up forwards keep coming while a rank would otherwise wait for its
  // first I's input (they may delay it); false: each must end by then, and
  // a wait may be left instead.
  bool warmup_may_delay_backward = false;
  // In the steady state, a rank two or more forwards ahead of the next
  // skips a forward that would hold up the backward coming back to it.
  bool backward_first = false;
  // A wait too short for a W is filled with one even when leaving it would
  // not make this rank the one that waits longest.
  bool fill_every_gap = false;
};

// Empty when the memory limit cannot be kept (a forward needs room that no
// pending W frees).
std::optional<Schedule> greedy_zero_bubble_order(const ZeroBubbleSearchRequest& request, GreedyChoices choices);

}  // namespace pipeplan::sim::detail
