#include "profiler/memory_probe.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

// The real allocator functions, reached through the linker's --wrap.
extern "C" {
void* __real_malloc(std::size_t size);
void __real_free(void* pointer);
void* __real_realloc(void* pointer, std::size_t size);
void* __real_calloc(std::size_t count, std::size_t size);
void* __real_aligned_alloc(std::size_t alignment, std::size_t size);
int __real_posix_memalign(void** pointer, std::size_t alignment, std::size_t size);
}

namespace pipeplan::profiler {
namespace {

std::atomic<std::int64_t> g_in_use{0};
std::atomic<std::int64_t> g_peak{0};
std::atomic<bool> g_linked{false};    // a wrapped function ran
std::atomic<bool> g_counting{false};  // the first probe started counting

// Counting starts with the first probe, so programs that never measure
// (the planner's worker threads) do not contend on the shared counters.
bool counting() { return g_counting.load(std::memory_order_relaxed); }

void count(std::int64_t delta) {
  const std::int64_t now = g_in_use.fetch_add(delta, std::memory_order_relaxed) + delta;
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

std::int64_t usable(void* pointer) {
  return pointer == nullptr ? 0 : static_cast<std::int64_t>(malloc_usable_size(pointer));
}

}  // namespace

std::int64_t heap_in_use_bytes() { return g_in_use.load(std::memory_order_relaxed); }

void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);         // every block from the heap, none from fresh mappings
  mallopt(M_TRIM_THRESHOLD, -1);  // never give the top of the heap back (-1: off)
  mallopt(M_ARENA_MAX, 1);             // one arena: every thread reuses the same memory
}

bool heap_accounting_active() { return g_linked.load(std::memory_order_relaxed); }

MemoryProbe::MemoryProbe() {
  g_counting.store(true, std::memory_order_relaxed);
  start_ = heap_in_use_bytes();
  g_peak.store(start_, std::memory_order_relaxed);
}

std::int64_t MemoryProbe::peak_above_start() const { return g_peak.load(std::memory_order_relaxed) - start_; }

std::int64_t MemoryProbe::now_above_start() const { return heap_in_use_bytes() - start_; }

}  // namespace pipeplan::profiler

extern "C" {

void* __wrap_malloc(std::size_t size) {
  void* pointer = __real_malloc(size);
  if (!pipeplan::profiler::g_linked.load(std::memory_order_relaxed)) {
    pipeplan::profiler::g_linked.store(true, std::memory_order_relaxed);
  }
  if (pipeplan::profiler::counting()) pipeplan::profiler::count(pipeplan::profiler::usable(pointer));
  return pointer;
}

void __wrap_free(void* pointer) {
  if (pipeplan::profiler::counting()) pipeplan::profiler::count(-pipeplan::profiler::usable(pointer));
  __real_free(pointer);
}

void* __wrap_realloc(void* pointer, std::size_t size) {
  if (!pipeplan::profiler::counting()) return __real_realloc(pointer, size);
  const std::int64_t before = pipeplan::profiler::usable(pointer);
  void* moved = __real_realloc(pointer, size);
  // On failure the old block stays allocated.
  if (moved != nullptr || size == 0) pipeplan::profiler::count(pipeplan::profiler::usable(moved) - before);
  return moved;
}

void* __wrap_calloc(std::size_t count, std::size_t size) {
  void* pointer = __real_calloc(count, size);
  if (pipeplan::profiler::counting()) pipeplan::profiler::count(pipeplan::profiler::usable(pointer));
  return pointer;
}

void* __wrap_aligned_alloc(std::size_t alignment, std::size_t size) {
  void* pointer = __real_aligned_alloc(alignment, size);
  if (pipeplan::profiler::counting()) pipeplan::profiler::count(pipeplan::profiler::usable(pointer));
  return pointer;
}

int __wrap_posix_memalign(void** pointer, std::size_t alignment, std::size_t size) {
  const int status = __real_posix_memalign(pointer, alignment, size);
  if (status == 0 && pipeplan::profiler::counting()) pipeplan::profiler::count(pipeplan::profiler::usable(*pointer));
  return status;
}

}  // extern "C"

// operator new lives in the shared C++ runtime, whose malloc calls the
// linker cannot wrap; replacing it routes every C++ allocation (the
// standard containers, and shared libraries', since the replacement
// interposes) through the counted functions.
namespace {

void* counted_new(std::size_t size) {
  if (void* pointer = std::malloc(size == 0 ? 1 : size)) return pointer;
  throw std::bad_alloc();
}

void* counted_aligned_new(std::size_t size, std::align_val_t alignment) {
  const auto align = static_cast<std::size_t>(alignment);
  void* pointer = nullptr;
  if (posix_memalign(&pointer, std::max(align, sizeof(void*)), size == 0 ? 1 : size) == 0) return pointer;
  throw std::bad_alloc();
}

}  // namespace

// Every form is replaced, the nothrow ones included (std::stable_sort's
// buffer uses them): a block from a form left to the runtime would be
// freed here by another allocator's delete.
void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void* operator new(std::size_t size, std::align_val_t alignment) { return counted_aligned_new(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return counted_aligned_new(size, alignment); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return std::malloc(size == 0 ? 1 : size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return std::malloc(size == 0 ? 1 : size); }
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  void* pointer = nullptr;
  const std::size_t align = std::max(static_cast<std::size_t>(alignment), sizeof(void*));
  return posix_memalign(&pointer, align, size == 0 ? 1 : size) == 0 ? pointer : nullptr;
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t& tag) noexcept {
  return operator new(size, alignment, tag);
}
void operator delete(void* pointer, const std::nothrow_t&) noexcept { std::free(pointer); }
void operator delete[](void* pointer, const std::nothrow_t&) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::align_val_t, const std::nothrow_t&) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::align_val_t, const std::nothrow_t&) noexcept { std::free(pointer); }
void operator delete(void* pointer) noexcept { std::free(pointer); }
void operator delete[](void* pointer) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::size_t) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::align_val_t) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::align_val_t) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::size_t, std::align_val_t) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::size_t, std::align_val_t) noexcept { std::free(pointer); }
