// Megatron's combined 1F1B (--overlap-moe-expert-parallel-comm): in the
// steady state each forward runs as one overlapped unit with the backward
// that follows it on its rank, so that one pass's expert all-to-all runs
// beside the other's compute, as DualPipe's F&B pairs do (Action::overlapped).
#pragma once

#include <string_view>

#include "sim/schedule.h"

namespace pipeplan::sim {

// Whether a schedule of `family` with `virtual_stages` chunks per rank
// pairs so: Megatron's interleaved 1F1B with v >= 2, whose steady state runs
// F(j) of one chunk right before B(i) of another.
// Megatron runs the overlap with virtual pipeline stages only; on plain
// 1F1B each forward is followed by its own micro-batch's backward on the
// last stage, and a pair there waits on the stage before's.
bool pairs_forward_backward(std::string_view family, int virtual_stages);
// Throws InputError unless a schedule of `family` with `virtual_stages`
// (0: not given) pairs so, naming --moe-a2a-overlap.
void check_pairs_forward_backward(std::string_view family, int virtual_stages);

// Makes each forward followed on its rank by an input-gradient pass (B or I)
// of another micro-batch one overlapped pair, left to right; pairs already
// marked stay and the order of the actions does not change. A pair starts
// once both inputs are there and sends both results when it ends; a pair
// that would wait on itself through another rank (around the warm-up's
// end) is left unmade.
void pair_forward_backward(Schedule& schedule);

}  // namespace pipeplan::sim
