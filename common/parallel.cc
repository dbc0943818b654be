#include "common/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pipeplan {

std::size_t pool_size(int requested, std::size_t work_items) {
  // Read once: each call reads the system's CPU files.
  static const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t wanted = requested > 0 ? static_cast<std::size_t>(requested) : cores;
  return std::max<std::size_t>(1, std::min(wanted, work_items));
}

void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t)>& body) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> first_failed{count};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (std::size_t index = next++; index < count && index < first_failed.load(); index = next++) {
      try {
        body(index);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (index < first_failed.load()) {
          first_failed = index;
          failure = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> pool;
  const std::size_t size = pool_size(threads, count);
  try {
    for (std::size_t t = 1; t < size; ++t) pool.emplace_back(worker);
  } catch (...) {
    // Could not start every thread: the ones running (and this one) finish the loop.
  }
  worker();
  for (std::thread& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace pipeplan
