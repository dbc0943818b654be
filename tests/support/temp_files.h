// Temporary files for tests. ctest runs each test in its own process, in
// parallel, and a process id comes back once a process ends, so each process
// gets a fresh directory of its own (mkdtemp) and removes it when it exits:
// no file, directory or link left by an earlier process can collide.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace pipeplan::testing {

class ProcessTempDir {
 public:
  ProcessTempDir() : path_(::testing::TempDir() + "pipeplan_XXXXXX") {
    if (mkdtemp(path_.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + path_);
  }
  ~ProcessTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string temp_path(const std::string& name) {
  static const ProcessTempDir dir;
  return dir.path() + "/" + name;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace pipeplan::testing
