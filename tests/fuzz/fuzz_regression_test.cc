// Every input the fuzzers found a bug with (tests/data/fuzz/<target>/)
// goes through its target in the normal build: accepted or refused with an
// InputError, nothing else; so do the shipped configs, the fuzzers' seeds.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fuzz/fuzz_targets.h"
#include "tests/support/cli_support.h"

namespace pipeplan::fuzz {
namespace {

namespace fs = std::filesystem;

TEST(FuzzRegression, EveryReproducerIsHandled) {
  std::size_t replayed = 0;
  for (const FuzzTarget& target : fuzz_targets()) {
    const fs::path folder = fs::path(testing::kData) / "fuzz" / target.name;
    if (!fs::is_directory(folder)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
      const std::string input = testing::slurp(entry.path().string());
      EXPECT_NO_THROW(target.run(input)) << target.name << ": " << entry.path();
      ++replayed;
    }
  }
  EXPECT_GT(replayed, 10u);
}

TEST(FuzzRegression, ShippedConfigsGoThroughTheirTargets) {
  const std::pair<const char*, const char*> seeds[] = {
      {"model_yaml", "models"}, {"hardware_yaml", "hardware"}, {"cluster_yaml", "clusters"}, {"study_file", "studies"},
      {"profile_file", "profiles"}};
  for (const auto& [name, folder] : seeds) {
    const FuzzTarget& target = find_fuzz_target(name);
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(testing::kConfigs) / folder)) {
      EXPECT_NO_THROW(target.run(testing::slurp(entry.path().string()))) << entry.path();
    }
  }
}

}  // namespace
}  // namespace pipeplan::fuzz
