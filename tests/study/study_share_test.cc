// A study shared among ranks: each rank runs the points up to the first
// result and then its round-robin share; rank 0 merges the packed results and
// writes byte for byte what one process writes. In-process here (shares run
// one after another); tests/cli/study_ranks_cli_test.cc runs it under mpirun.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "study/outcome_exchange.h"
#include "study/runner.h"
#include "study/study_file.h"
#include "study/study_report.h"
#include "tests/support/cli_support.h"
#include "tests/support/study_output_compare.h"

namespace pipeplan::testing {
namespace {

namespace fs = std::filesystem;

std::vector<study::PointOutcome> run_share(const study::StudyFile& file, const std::string& out, int rank, int ranks) {
  return study::run_study(file, {out, 1, false, {}, {rank, ranks}});
}

TEST(StudyShare, MergedSharesWriteWhatOneProcessWrites) {
  // One plain sweep, one that writes a derived model file per point.
  for (const char* name : {"bubble_vs_microbatches", "goodput_by_mtbf"}) {
    const study::StudyFile file = study::read_study(kConfigs + "/studies/" + name + ".yaml");
    // Both in one folder (derived files' paths are in the outputs), the whole study's moved aside.
    const std::string shared = temp_path(std::string("share_") + name);
    const std::string whole = shared + "_whole";
    fs::remove_all(whole);
    fs::remove_all(shared);
    fs::create_directories(shared);
    study::write_study_outputs(file, study::run_study(file, {shared, 1, false, {}, {}}), shared);
    fs::rename(shared, whole);
    for (int ranks : {2, 3}) {
      fs::remove_all(shared);
      fs::create_directories(shared);
      std::vector<study::PointOutcome> merged = run_share(file, shared, 0, ranks);
      std::size_t ran = 0;
      for (const study::PointOutcome& outcome : merged) ran += outcome.ran ? 1 : 0;
      EXPECT_LT(ran, merged.size()) << "rank 0 ran every point of " << name;
      for (int rank = 1; rank < ranks; ++rank) {
        study::merge_outcomes(study::pack_outcomes(run_share(file, shared, rank, ranks)), merged);
      }
      for (const study::PointOutcome& outcome : merged) EXPECT_TRUE(outcome.ran) << name;
      study::write_study_outputs(file, merged, shared);
      EXPECT_GT(expect_same_files(whole, shared), 3u) << name;
    }
  }
}

TEST(StudyShare, SharesSplitThePointsAfterTheFirstResult) {
  const study::StudyFile file = study::read_study(kConfigs + "/studies/bubble_vs_microbatches.yaml");
  const std::string out = temp_path("share_split");
  const std::vector<study::PointOutcome> zero = run_share(file, out, 0, 2);
  const std::vector<study::PointOutcome> one = run_share(file, out, 1, 2);
  ASSERT_EQ(zero.size(), 60u);  // 5 schedules x 3 depths x 4 micro-batch counts
  // The first point has a result, so both ran it; then odd and even indices.
  for (std::size_t index = 0; index < zero.size(); ++index) {
    const bool first = index == 0;
    EXPECT_EQ(zero[index].ran, first || index % 2 == 1) << index;
    EXPECT_EQ(one[index].ran, first || index % 2 == 0) << index;
  }
}

TEST(StudyShare, BadSharesAndDamagedResultsAreRefused) {
  const study::StudyFile file = study::read_study(kConfigs + "/studies/bubble_vs_microbatches.yaml");
  const std::string out = temp_path("share_bad");
  EXPECT_THROW(run_share(file, out, 2, 2), InputError);
  EXPECT_THROW(run_share(file, out, 0, 0), InputError);
  std::vector<study::PointOutcome> outcomes = run_share(file, out, 0, 2);
  const std::string packed = study::pack_outcomes(outcomes);
  EXPECT_THROW(study::merge_outcomes(packed.substr(0, packed.size() / 2), outcomes), InputError);
  EXPECT_THROW(study::merge_outcomes("not cbor at all", outcomes), InputError);
  std::vector<study::PointOutcome> fewer(outcomes.begin(), outcomes.begin() + 3);
  EXPECT_THROW(study::merge_outcomes(packed, fewer), InputError);
}

TEST(StudyShare, PackedResultsRoundTripExactly) {
  const study::StudyFile file = study::read_study(kConfigs + "/studies/bubble_vs_microbatches.yaml");
  const std::vector<study::PointOutcome> ran = study::run_study(file, {temp_path("share_trip"), 1, false, {}, {}});
  std::vector<study::PointOutcome> copy = ran;
  for (study::PointOutcome& outcome : copy) {
    outcome.metrics = nullptr;
    outcome.fields = nullptr;
    outcome.ran = false;
  }
  study::merge_outcomes(study::pack_outcomes(ran), copy);
  for (std::size_t index = 0; index < ran.size(); ++index) {
    EXPECT_EQ(copy[index].metrics.dump(), ran[index].metrics.dump()) << index;
    EXPECT_EQ(copy[index].fields.dump(), ran[index].fields.dump()) << index;
    EXPECT_EQ(copy[index].error, ran[index].error) << index;
    EXPECT_TRUE(copy[index].ran);
  }
}

}  // namespace
}  // namespace pipeplan::testing
