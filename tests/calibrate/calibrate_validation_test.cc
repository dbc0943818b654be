// `pipeplan calibrate` on what `pipeplan validate` measured: a
// comparison.json and the plan it names make a pipeline-only run, and the
// fit recovers the parameter its measured time was made with.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include "calibrate/calibration.h"
#include "calibrate/validation_runs.h"
#include "common/error.h"
#include "models/hardware.h"
#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::calibrate {
namespace {

namespace fs = std::filesystem;
using pipeplan::testing::run;

// A two-stage plan on CPU ranks, as the README's validate example makes it,
// and a validation directory beside it.
fs::path plan_directory() {
  const fs::path dir = pipeplan::testing::temp_path("calibrate-validation");
  fs::create_directories(dir / "validation");
  const auto made = run("plan --model gpt2-small --hardware cpu --gpus 2 --global-batch 4 --seq 128 --pp 2 --out " +
                        (dir / "plan.yaml").string());
  EXPECT_EQ(made.code, 0) << made.err;
  return dir;
}

std::string write_comparison(const fs::path& dir, const std::string& plan, double measured_s) {
  const fs::path path = dir / "validation" / "comparison.json";
  std::ofstream(path) << std::setprecision(17) << "{\"plan\": \"" << plan << "\", \"measured_iteration_s\": " << measured_s
                      << ", \"backend\": \"cpu\"}\n";
  return path.string();
}

TEST(CalibrateValidation, AComparisonIsAPipelineOnlyRunOfItsPlan) {
  const fs::path dir = plan_directory();
  const MeasuredRun run = read_validation_run(write_comparison(dir, "plan.yaml", 0.5));
  EXPECT_TRUE(run.pipeline_only);
  EXPECT_EQ(run.model, "gpt2-small");
  EXPECT_EQ(run.hardware, "cpu");
  EXPECT_EQ(run.job.pp, 2);
  EXPECT_EQ(run.gpus, 2);
  EXPECT_EQ(run.seq, 128);
  EXPECT_DOUBLE_EQ(run.step_time_s, 0.5);
  ASSERT_TRUE(run.split.has_value());
  EXPECT_EQ(run.split->stages(), 2);
  // Read by the name's extension, as the command line does.
  EXPECT_TRUE(read_runs_file((dir / "validation" / "comparison.json").string()).front().pipeline_only);
}

TEST(CalibrateValidation, TheFitRecoversTheCeilingTheMeasurementWasMadeWith) {
  const fs::path dir = plan_directory();
  const std::string comparison = write_comparison(dir, "plan.yaml", 1.0);
  models::HardwareConfig truth = models::load_hardware("cpu");
  truth.gpu.matmul.max_fraction = 0.4;
  const double measured = predict_runs({read_validation_run(comparison)}, &truth).front().predicted_s;
  // The pipeline alone: no optimizer step in the prediction.
  EXPECT_GT(measured, 0);
  const MeasuredRun made = read_validation_run(write_comparison(dir, "plan.yaml", measured));
  const Calibration fit = calibrate({made}, {parse_fit("gpu.efficiency.matmul.max"), 0});
  EXPECT_NEAR(fit.parameters.front().value, 0.4, 1e-6);
}

TEST(CalibrateValidation, TwoPlansThatFitTheNameAreRefused) {
  // validate --out DIR beside the plan, and another plan.yaml inside DIR:
  // which one ran cannot be told.
  const fs::path dir = plan_directory();
  fs::copy_file(dir / "plan.yaml", dir / "validation" / "plan.yaml", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "validation" / "plan.yaml", std::ios::app) << "\n";
  try {
    read_validation_run(write_comparison(dir, "plan.yaml", 1.0));
    ADD_FAILURE() << "accepted an ambiguous plan";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("names both"), std::string::npos) << error.what();
  }
  fs::remove(dir / "validation" / "plan.yaml");
}

TEST(CalibrateValidation, AMissingPlanOrTimeIsNamed) {
  const fs::path dir = plan_directory();
  try {
    read_validation_run(write_comparison(dir, "nowhere.yaml", 1.0));
    ADD_FAILURE() << "accepted a comparison whose plan is missing";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("plan: 'nowhere.yaml'"), std::string::npos) << error.what();
  }
  try {
    read_validation_run(write_comparison(dir, "plan.yaml", 0));
    ADD_FAILURE() << "accepted a measured time of 0";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("measured_iteration_s"), std::string::npos) << error.what();
  }
  // Past any physical step: 1e308 s made every error and fit non-finite.
  for (double absurd : {1e308, 86401.0}) {
    try {
      read_validation_run(write_comparison(dir, "plan.yaml", absurd));
      ADD_FAILURE() << "accepted a measured time of " << absurd << " s";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("at most a day"), std::string::npos) << error.what();
    }
  }
  // A file saved with a UTF-8 byte-order mark reads as the same JSON.
  const std::string marked = write_comparison(dir, "plan.yaml", 2.5);
  std::stringstream text;
  text << std::ifstream(marked).rdbuf();
  std::ofstream(marked) << "\xEF\xBB\xBF" << text.str();
  EXPECT_DOUBLE_EQ(read_validation_run(marked).step_time_s, 2.5);
}

}  // namespace
}  // namespace pipeplan::calibrate
