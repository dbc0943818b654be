// Every measured run the project ships (configs/calibration/, each row
// transcribed from ../shared/reference.md with its source) ran on the GPUs it
// names: replayed at its configuration, it must fit their memory. A run
// judged not to fit is a fault in the memory model (or a setting the run's
// file leaves out), never in the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "calibrate/calibration.h"
#include "calibrate/measured_runs.h"
#include "common/units.h"
#include "tests/support/cli_support.h"

namespace pipeplan::calibrate {
namespace {

std::vector<std::string> run_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(pipeplan::testing::kConfigs + "/calibration")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  return files;
}

TEST(MeasuredRunsFit, EveryShippedRunFitsTheMemoryOfItsGpus) {
  const std::vector<std::string> files = run_files();
  ASSERT_GE(files.size(), 4u);
  int runs = 0;
  for (const std::string& file : files) {
    for (const RunPrediction& row : predict_runs(read_runs_file(file))) {
      ++runs;
      EXPECT_TRUE(row.fits_memory) << file << ": " << row.run.name << " needs "
                                   << format_bytes(static_cast<double>(row.predicted_peak_bytes)) << " per GPU";
      if (row.run.peak_memory_bytes) {
        EXPECT_NEAR(static_cast<double>(row.predicted_peak_bytes), *row.run.peak_memory_bytes,
                    0.10 * *row.run.peak_memory_bytes)
            << file << ": " << row.run.name;
      }
    }
  }
  EXPECT_GE(runs, 20);
}

// The Nemotron-4 340B recipe keeps its optimizer state in bf16
// (nemotron4-340b-synth.yaml, optim.dtype bf16): by hand, 5.77 B weights on
// the first pipeline rank (the embedding's 256000 x 18432 / 8 and 12 blocks
// of 3.454 B / 8) hold 2 + 2 bytes of weights and bf16 gradients and
// 6 / d = 3 bytes of optimizer state (fp32 state: 6), 16.1 GiB less.
TEST(MeasuredRunsFit, BfSixteenOptimizerStateIsWhatLetsTheThreeFortyBFit) {
  std::vector<MeasuredRun> runs;
  for (const MeasuredRun& run : read_runs_file(pipeplan::testing::kConfigs + "/calibration/dgx-h100-nemo.yaml")) {
    if (run.name == "nemotron4-340b-128") runs.push_back(run);
  }
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs.front().job.runtime.master_weights_in_bf16);
  const RunPrediction as_run = predict_runs(runs).front();
  runs.front().job.runtime.master_weights_in_bf16 = false;
  runs.front().job.runtime.optimizer_states_in_bf16 = false;
  const RunPrediction fp32_state = predict_runs(runs).front();
  EXPECT_TRUE(as_run.fits_memory);
  EXPECT_FALSE(fp32_state.fits_memory);
  const double params = 256000.0 * 18432 / 8 + 12 * 3.4539e9 / 8;
  EXPECT_NEAR(static_cast<double>(fp32_state.predicted_peak_bytes - as_run.predicted_peak_bytes), 3 * params,
              0.01 * 3 * params);
}

}  // namespace
}  // namespace pipeplan::calibrate
