#include "cli/measure_handover.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace pipeplan::cli {

bool runs_in_measure(std::string_view command) { return command == "profile" || command == "validate"; }

int hand_over_to_measure(char** argv) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  const fs::path measure = (error ? fs::path(argv[0]) : self).parent_path() / "pipeplan-measure";
  if (!fs::is_regular_file(measure, error)) {
    std::cerr << fmt::format("pipeplan: error: `pipeplan {}` runs in {}, which is missing: build the project "
                             "(cmake --build build builds it beside pipeplan) or install both programs\n",
                             argv[1], measure.string());
    return 2;
  }
  const std::string path = measure.string();
  argv[0] = const_cast<char*>(path.c_str());
  execv(path.c_str(), argv);
  std::cerr << fmt::format("pipeplan: error: cannot start {}: {}\n", path, std::strerror(errno));
  return 2;
}

}  // namespace pipeplan::cli
