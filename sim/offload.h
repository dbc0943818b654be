// Activation offload (PipeOffload, Wan et al. 2025): a micro-batch's
// activations on a stage leave the GPU for host memory once its forward has
// run and come back for its backward, each copy on the GPU's host link
// (Topology::host, one link per direction) beside the compute. Which ones
// and when, here: each rank offloads every micro-batch whose backward (I or
// B) does not come right after its forward on the rank (another compute
// action runs between them, so its activations would wait on the device),
// and reloads it one compute action ahead of that backward, so that the
// copy runs beside that action. The engine (sim/engine.h) runs the copies:
// a reload waits for its offload, the backward for its reload.
#pragma once

#include "sim/schedule.h"

namespace pipeplan::sim {

// `lowered` with OFFLOAD after each offloaded forward and RELOAD before the
// compute action ahead of its backward. Throws InputError for a schedule
// with overlapped pairs (DualPipeV's F&B: a copy cannot split the pair).
Schedule add_host_copies(const Schedule& lowered);

}  // namespace pipeplan::sim
