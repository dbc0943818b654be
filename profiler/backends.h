// The backends a build may or may not have: CUDA (when nvcc was found) and
// MPI (when an MPI library was found). Calls into a missing backend throw
// InputError saying how to get it.
#pragma once

#include <cstdint>

#include "models/profile_file.h"
#include "profiler/gemm_sweep.h"
#include "profiler/layer_profiler.h"

namespace pipeplan::profiler {

// Throws InputError when this build has no CUDA or no GPU is present.
models::Profile profile_layers_cuda(const ProfileRequest& request);
// One bf16 cuBLAS GEMM per shape on the first GPU. Throws InputError
// without CUDA or a GPU, or when a shape does not fit.
GemmSweep measure_gemms_cuda(const std::vector<GemmSize>& sizes, int warmup, int repeats);
// NCCL send/recv between the first two GPUs of this machine.
models::LinkProfile measure_links_nccl(std::int64_t max_bytes, int warmup, int repeats);
// Initialises MPI if needed, sweeps ranks 0 and 1, finalises. Ranks other
// than 0 get an empty profile (rank 0 reports).
models::LinkProfile measure_links_with_mpi(std::int64_t max_bytes, int warmup, int repeats);

bool built_with_cuda();
bool built_with_mpi();

}  // namespace pipeplan::profiler
