// Column sums for the weight-gradient passes: a bias's gradient is the
// column sums of dy, a norm's gain gradient those of dy * normalised input.
#pragma once

#include "profiler/cuda/device_tensor.h"

namespace pipeplan::profiler {

// out (fp32, 1 x cols) += the column sums of a (bf16, rows x cols), each
// entry times b's (bf16, same shape) when b is given. Deterministic (two
// passes, no atomics); the partial sums' workspace comes from the counting
// allocator.
void add_column_sums(const DeviceTensor& a, const DeviceTensor* b, DeviceTensor& out);

}  // namespace pipeplan::profiler
