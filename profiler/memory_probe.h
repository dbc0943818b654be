// Heap accounting through the allocator: every malloc/free the program's
// own code makes (Eigen's matrices included) is counted, so a profile can
// report the bytes a pass keeps and its peak working memory as measured,
// not as estimated. Programs linking pipeplan::profiler route malloc, free,
// realloc and calloc through these counters (the linker's --wrap).
#pragma once

#include <cstdint>

namespace pipeplan::profiler {

// Bytes currently allocated through the counted functions since the first
// MemoryProbe started counting (frees of older blocks may make it dip).
std::int64_t heap_in_use_bytes();

// The high-water mark since a probe started.
class MemoryProbe {
 public:
  MemoryProbe();  // starts counting if nothing did; the peak restarts from the current use
  std::int64_t start_bytes() const { return start_; }
  std::int64_t peak_above_start() const;   // highest use since start, minus the start
  std::int64_t now_above_start() const;    // current use minus the start

 private:
  std::int64_t start_;
};

// Keeps freed heap memory for reuse instead of returning it to the system
// (no mmap for large blocks, no trimming), as a training framework's
// caching allocator does, so that timed passes do not pay for page faults
// on fresh mappings. Call once before measuring.
void keep_freed_memory();

// False when the program was linked without the wrapping (counts stay 0).
bool heap_accounting_active();

}  // namespace pipeplan::profiler
