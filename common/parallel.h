// Runs a loop body over [0, count) on a few threads. Every thread pool in
// pipeplan goes through here, so that an exception thrown by a body reaches
// the caller instead of terminating the process: the exception of the
// lowest failing index is rethrown after all workers have joined, which
// makes the error the same whatever the number of threads.
#pragma once

#include <cstddef>
#include <functional>

namespace pipeplan {

// The threads a pool runs for `work_items` items: `requested` (0: every
// core), never more than the items, at least one.
std::size_t pool_size(int requested, std::size_t work_items);

// Calls body(i) for every i in [0, count) on pool_size(threads, count)
// threads (the caller's among them). Indices are handed out in increasing
// order; once an index has failed, indices above it are skipped.
void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t)>& body);

}  // namespace pipeplan
