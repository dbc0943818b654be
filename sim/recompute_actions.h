// Activation recomputation as passes of its own, placed in the bubbles
// (Mario, Liu et al., PPoPP 2025): a recomputing stage's backward (B or I)
// runs its recomputed forward first, and that needs only the checkpoint
// the stage kept, not the gradient from the next stage. Run as a RECOMPUTE
// action right before its backward, it fills the wait for that gradient
// (the cooldown's bubbles, and any stage waiting on a slower one) instead
// of lengthening the chain of backwards through the pipeline. What it
// costs: the recomputed activations of the whole stage are held from the
// RECOMPUTE's start to the backward's end (StageCost::recompute_bytes),
// where a backward that recomputes inside itself holds one layer's at a
// time (the static working memory, which stays as it is).
#pragma once

#include "sim/costs.h"
#include "sim/schedule.h"

namespace pipeplan::sim {

struct RecomputeActions {
  Schedule schedule;    // with a RECOMPUTE before each recomputing backward
  PipelineCosts costs;  // the backwards without the recomputation (recompute_apart)
  std::size_t actions = 0;  // RECOMPUTEs placed
};

// Places a RECOMPUTE before the backward (B or I) of every micro-batch of
// each stage whose costs recompute (recompute_s > 0): right before it, or
// before the RECVs just ahead of it (they may block there), or before the
// forward it is overlapped with (DualPipeV's F&B pair stays whole). Throws
// InputError when no stage recomputes.
RecomputeActions add_recompute_actions(const Schedule& schedule, const PipelineCosts& costs);

}  // namespace pipeplan::sim
