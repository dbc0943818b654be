// Temporary files for tests. ctest runs each test in its own process, in
// parallel, so names carry the process id.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace pipeplan::testing {

inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "pipeplan_" + std::to_string(getpid()) + "_" + name;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace pipeplan::testing
