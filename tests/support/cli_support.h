// Running the pipeplan binary from tests: its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_files.h"

namespace pipeplan::testing {

inline const std::string kBinary = PIPEPLAN_BINARY;
inline const std::string kData = PIPEPLAN_TEST_DATA_DIR;
inline const std::string kConfigs = PIPEPLAN_CONFIG_DIR;

struct CommandResult {
  int code;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `prefix pipeplan args` (prefix: e.g. an mpirun line) under a timeout;
// `binary` replaces the built pipeplan.
inline CommandResult run_with(const std::string& prefix, const std::string& args, int timeout_s = 120,
                              const std::string& binary = kBinary) {
  const std::string out = temp_path("stdout"), err = temp_path("stderr");
  const std::string command = "timeout " + std::to_string(timeout_s) + " " + prefix + binary + " " + args + " >" +
                              out + " 2>" + err;
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

inline CommandResult run(const std::string& args) { return run_with("", args); }

inline std::size_t lines(const std::string& text) {
  std::size_t count = 0;
  for (char c : text) count += c == '\n';
  return count;
}

// Bad input: exit 2, one line on stderr naming the problem.
inline void expect_refused(const std::string& args, const std::string& needle) {
  const CommandResult result = run(args);
  EXPECT_EQ(result.code, 2) << args << "\n" << result.err;
  EXPECT_EQ(lines(result.err), 1u) << args << "\n" << result.err;
  EXPECT_EQ(result.err.rfind("pipeplan: error: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find(needle), std::string::npos) << args << "\n" << result.err;
}

// A plan of Llama 3 8B on 8 H100 with `fixed` axes written to a temporary
// file: its path, or empty when planning failed.
inline std::string written_plan(const std::string& name, const std::string& fixed) {
  const std::string plan = temp_path(name);
  const CommandResult result = run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 " +
                                   fixed + " --out " + plan);
  EXPECT_EQ(result.code, 0) << result.err;
  return result.code == 0 ? plan : "";
}

}  // namespace pipeplan::testing
