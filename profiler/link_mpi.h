// Point-to-point link sweep between MPI ranks 0 and 1 (the CPU ranks a
// validation run uses): ping-pong over message sizes, half the round trip
// as the one-way time, reported as nccl-tests reports send/recv (algbw =
// busbw = bytes / time) and fitted to latency + bytes / bandwidth.
#pragma once

#include <cstdint>

#include "models/profile_file.h"

namespace pipeplan::profiler {

// Collective over MPI_COMM_WORLD (MPI must be initialised); every rank
// calls it, ranks beyond 1 wait. The result is complete on rank 0. Throws
// InputError with fewer than 2 ranks.
models::LinkProfile measure_links_mpi(std::int64_t max_bytes, int warmup, int repeats);

}  // namespace pipeplan::profiler
