// What every GEMM sweep satisfies, whichever backend measured it: each shape
// timed `runs` times, min <= median <= max, a positive time, and a rate that
// is its FLOPs over the median.
#pragma once

#include <gtest/gtest.h>

#include "profiler/gemm_sweep.h"

namespace pipeplan::testing {

inline void expect_consistent_sweep(const profiler::GemmSweep& sweep, int runs) {
  for (const profiler::GemmMeasurement& g : sweep.shapes) {
    EXPECT_EQ(g.time.runs, runs);
    EXPECT_GT(g.time.min_s, 0.0);
    EXPECT_LE(g.time.min_s, g.time.median_s);
    EXPECT_LE(g.time.median_s, g.time.max_s);
    EXPECT_DOUBLE_EQ(g.flops_per_s(), g.size.flops() / g.time.median_s);
  }
}

}  // namespace pipeplan::testing
