// How long work reports how far it got: `done` of `total` steps, and what
// the next one is ("transformer, b=1, seq=4096"). Library code calls it;
// the CLI decides whether anything is shown (commands/terminal_progress.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace pipeplan {

using ProgressFn = std::function<void(std::size_t done, std::size_t total, const std::string& what)>;

// Calls `progress` when it is set.
inline void report(const ProgressFn& progress, std::size_t done, std::size_t total, const std::string& what) {
  if (progress) progress(done, total, what);
}

}  // namespace pipeplan
