// The time of one GEMM kernel from its shape, as a GEMM library runs it:
// the output is cut into tiles, one thread block per tile, and the blocks
// run in waves of one per SM; a partly filled last wave costs a whole one.
// The library picks the tile (and, for outputs too small to fill the GPU, a
// split of the summed dimension) that finishes first. A kernel never runs
// faster than its operands stream through HBM, and each pays a fixed cost.
#pragma once

#include "models/hardware.h"
#include "models/layers.h"

namespace pipeplan::models {

struct GemmTiming {
  double seconds = 0;     // one kernel, fixed cost included
  GemmTile tile;          // the one picked
  int split_k = 1;        // the summed dimension cut into this many parts
  double blocks = 0;      // thread blocks: tiles x batch x split_k
  double waves = 0;       // ceil(blocks / SMs)
  bool memory_bound = false;
};

// Throws InputError when the hardware lacks the peak rate.
GemmTiming gemm_timing(const GemmWork& gemm, const GpuSpec& gpu);

}  // namespace pipeplan::models
