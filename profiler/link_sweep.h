// Measuring a link over message sizes, on any transport: the sweep that
// `profile links` runs over MPI and NCCL.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "models/profile_file.h"

namespace pipeplan::profiler {

// A sweep over message sizes 8 B, 32 B, ... up to max_bytes (x4 each):
// `one_way_s(bytes)` times one transfer; warm-ups dropped, the rest
// summarised and reported as nccl-tests reports send/recv, then fitted.
models::LinkProfile sweep_link(const std::string& backend, std::int64_t max_bytes, int warmup, int repeats,
                               const std::function<double(std::int64_t)>& one_way_s);

}  // namespace pipeplan::profiler
