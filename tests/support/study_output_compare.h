// Two study output folders, file by file: the same files, with the same
// bytes. Returns how many files were compared.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/cli_support.h"

namespace pipeplan::testing {

inline std::size_t expect_same_files(const std::string& expected, const std::string& actual) {
  namespace fs = std::filesystem;
  std::size_t compared = 0;
  for (const fs::directory_entry& file : fs::recursive_directory_iterator(expected)) {
    if (!file.is_regular_file()) continue;
    const fs::path other = fs::path(actual) / fs::relative(file.path(), expected);
    EXPECT_TRUE(fs::exists(other)) << other;
    EXPECT_EQ(slurp(file.path().string()), slurp(other.string())) << other;
    ++compared;
  }
  std::size_t files = 0;
  for (const fs::directory_entry& file : fs::recursive_directory_iterator(actual)) files += file.is_regular_file();
  EXPECT_EQ(files, compared) << actual << " holds files " << expected << " lacks";
  return compared;
}

}  // namespace pipeplan::testing
