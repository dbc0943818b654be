#include "commands/terminal_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <mutex>

namespace pipeplan::commands {

ProgressFn terminal_progress(std::string label) {
  if (isatty(STDERR_FILENO) == 0) return {};
  auto mutex = std::make_shared<std::mutex>();
  auto width = std::make_shared<std::size_t>(0);  // of the last line, to clear it
  return [label = std::move(label), mutex, width](std::size_t done, std::size_t total, const std::string& what) {
    constexpr std::size_t kBar = 20;
    const std::lock_guard lock(*mutex);
    const std::size_t filled = total > 0 ? std::min(done, total) * kBar / total : kBar;
    const std::string line = fmt::format("{} [{}{}] {}/{} {}", label, std::string(filled, '#'),
                                         std::string(kBar - filled, '.'), done, total, what);
    std::cerr << '\r' << line << std::string(line.size() < *width ? *width - line.size() : 0, ' ')
              << (done >= total ? "\n" : "") << std::flush;
    *width = line.size();
  };
}

}  // namespace pipeplan::commands
