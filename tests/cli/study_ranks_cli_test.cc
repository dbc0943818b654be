// `mpirun -np N pipeplan study`: the ranks share the points and rank 0 writes
// the same files as one process, byte for byte; a refusal is one line from
// rank 0 and exit 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/study_output_compare.h"

namespace pipeplan::testing {
namespace {

namespace fs = std::filesystem;

// In sanitizer builds, OpenMPI's allocations that outlive MPI_Finalize (its
// progress thread's among them) reach a frame tests/lsan.supp names only when
// unwound in full, as pipeplan-measure does for itself; elsewhere
// ASAN_OPTIONS is ignored.
const std::string kMpirun =
    "env ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:fast_unwind_on_malloc=0\" mpirun --allow-run-as-root --oversubscribe -np ";

class StudyRanksCli : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef PIPEPLAN_HAVE_MPI
    GTEST_SKIP() << "built without MPI";
#endif
    ASSERT_EQ(std::system("command -v mpirun >/dev/null 2>&1"), 0) << "install openmpi-bin";
  }
};

TEST_F(StudyRanksCli, RanksWriteWhatOneProcessWrites) {
  for (const char* name : {"bubble_vs_microbatches", "goodput_by_mtbf"}) {
    const std::string study = kConfigs + "/studies/" + name + ".yaml";
    // Both in one folder (derived files' paths are in the outputs), the single run's moved aside.
    const std::string shared = temp_path(std::string("ranks_") + name);
    const std::string single = shared + "_single";
    fs::remove_all(single);
    fs::remove_all(shared);
    const CommandResult one = run("study " + study + " --out " + shared);
    ASSERT_EQ(one.code, 0) << one.err;
    fs::rename(shared, single);
    for (const char* ranks : {"2", "3"}) {
      fs::remove_all(shared);
      const CommandResult many = run_with(kMpirun + ranks + " ", "study " + study + " --out " + shared, 300);
      ASSERT_EQ(many.code, 0) << many.err;
      EXPECT_EQ(lines(many.out), 1u) << "only rank 0 reports:\n" << many.out;
      EXPECT_NE(many.out.find(std::string(" on ") + ranks + " ranks in "), std::string::npos) << many.out;
      EXPECT_GT(expect_same_files(single, shared), 3u) << name << " on " << ranks << " ranks";
    }
  }
}

TEST_F(StudyRanksCli, ARefusalIsOneLineFromRankZero) {
  const std::string study = temp_path("ranks_bad_study.yaml");
  std::ofstream(study) << "mode: simulate\nbase: {tf: 1ms, tb: 1ms}\nsweep:\n  grid:\n    stages: [4, 8]\n"
                          "metrics: [no_such_metric]\n";
  const CommandResult result = run_with(kMpirun + "2 ", "study " + study + " --out " + temp_path("ranks_bad"), 120);
  EXPECT_EQ(result.code, 2) << result.err;
  EXPECT_EQ(result.err.rfind("pipeplan: error: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find("no_such_metric"), std::string::npos) << result.err;
  std::size_t errors = 0;
  for (std::size_t at = result.err.find("pipeplan: error:"); at != std::string::npos;
       at = result.err.find("pipeplan: error:", at + 1)) {
    ++errors;
  }
  EXPECT_EQ(errors, 1u) << result.err;
}

TEST_F(StudyRanksCli, HelpAndBadArgumentsAreAnsweredOnce) {
  const std::string study = kConfigs + "/studies/bubble_vs_microbatches.yaml";
  const CommandResult bogus = run_with(kMpirun + "3 ", "study " + study + " --bogus", 120);
  EXPECT_EQ(bogus.code, 2);
  EXPECT_EQ(bogus.err.rfind("pipeplan: error: unknown option --bogus", 0), 0u) << bogus.err;
  EXPECT_EQ(bogus.err.find("pipeplan: error:", 1), std::string::npos) << bogus.err;
  const CommandResult jobs = run_with(kMpirun + "2 ", "study " + study + " --jobs abc", 120);
  EXPECT_EQ(jobs.code, 2);
  EXPECT_EQ(jobs.err.find("pipeplan: error:", 1), std::string::npos) << jobs.err;
  const CommandResult help = run_with(kMpirun + "2 ", "study --help", 120);
  EXPECT_EQ(help.code, 0) << help.err;
  const std::string usage = "Usage:";
  const std::size_t first = help.out.find(usage);
  ASSERT_NE(first, std::string::npos) << help.out;
  EXPECT_EQ(help.out.find(usage, first + 1), std::string::npos) << "help printed twice:\n" << help.out;
}

}  // namespace
}  // namespace pipeplan::testing
