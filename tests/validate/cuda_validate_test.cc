// Executing schedules for real on the GPU backend, ranks as threads: a
// single-rank 1F1B and ZBH1 run of `tiny` on the GPU gives the loss and
// every gradient of the CPU fp32 reference with the same (bf16-rounded)
// weights, within the bf16 tolerance, and runs every action of the
// schedule once, in order. Each test skips itself without a GPU; the
// refusal without one runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/model_config.h"
#include "profiler/cuda/device_context.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "step/stage_split.h"
#include "tests/support/cuda_test_support.h"
#include "validate/cuda/cuda_execution.h"
#include "validate/gradient_check.h"
#include "validate/thread_transport.h"

namespace pipeplan::validate {
namespace {

struct SingleRankRun {
  models::ModelConfig model = models::load_model("tiny");
  models::TrainingShape shape;
  sim::Schedule lowered;
  step::StageSplit split{std::vector<int>{0, 1}};
};

SingleRankRun single_rank(const std::string& schedule, int microbatches) {
  SingleRankRun run;
  run.shape.micro_batch_size = 2;
  run.shape.seq_len = 16;
  run.lowered = sim::lower_communication(sim::generate_schedule(schedule, {1, microbatches, 0, 0}), sim::RecvPlacement::kBeforeUse);
  run.split = step::even_split(run.model.layers, run.lowered.stages);
  return run;
}

RankResult run_on_gpu(const SingleRankRun& run, const ExecutionSettings& settings) {
  RankResult result;
  ThreadGroup::run(1, 60, [&](Transport& transport) {
    result = execute_rank_cuda(run.model, run.shape, run.lowered, run.split, transport, settings);
  });
  return result;
}

class CudaPipelinedGradients : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaPipelinedGradients, MatchTheCpuReferenceAtBf16Tolerance) {
  SKIP_WITHOUT_GPU();
  const SingleRankRun run = single_rank(GetParam(), 4);
  ExecutionSettings settings;
  settings.check_gradients = true;
  settings.warmup = 1;
  settings.iterations = 2;
  const RankResult result = run_on_gpu(run, settings);

  ASSERT_TRUE(result.gradients.has_value());
  EXPECT_EQ(result.gradients->tolerance, kBf16GradientTolerance);
  EXPECT_EQ(result.gradients->parameters, 27);  // tiny: 4 blocks x 6, embedding, final norm, LM head
  EXPECT_LT(result.gradients->max_relative_error, kBf16GradientTolerance) << result.gradients->worst_parameter;
  ::testing::Test::RecordProperty("max_relative_error", std::to_string(result.gradients->max_relative_error));
  ASSERT_TRUE(result.holds_loss);
  EXPECT_NEAR(result.loss, result.reference_loss, kBf16GradientTolerance * std::abs(result.reference_loss));
  EXPECT_NEAR(result.loss, std::log(512.0), 1.0);  // near-uniform predictions over 512 tokens

  // Every action of the schedule ran once per iteration, in its order
  // (a single rank has no communication: every action is a compute one).
  ASSERT_EQ(result.iterations.size(), 2u);
  for (const std::vector<RunRecord>& records : result.iterations) {
    const std::vector<sim::Action>& actions = run.lowered.actions.front();
    ASSERT_EQ(records.size(), actions.size());
    double last_end = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(records[i].action, actions[i]) << i;
      EXPECT_GE(records[i].start_s, last_end) << i;  // each action waits for the previous one's kernels
      EXPECT_GT(records[i].end_s, records[i].start_s) << i;
      last_end = records[i].end_s;
    }
  }
  EXPECT_GT(result.parameter_bytes, 0);
  EXPECT_GT(result.peak_held_bytes, 0);
  EXPECT_GE(result.peak_heap_bytes, result.peak_held_bytes);  // the device allocator saw at least what is held
}

INSTANTIATE_TEST_SUITE_P(SingleRank, CudaPipelinedGradients, ::testing::Values("1F1B", "ZBH1"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

TEST(CudaExecution, WithoutAGpuSaysToUseTheCpuBackend) {
  if (profiler::cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  const SingleRankRun run = single_rank("1F1B", 2);
  try {
    run_on_gpu(run, ExecutionSettings{});
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("no CUDA GPU found"), std::string::npos) << message;
    EXPECT_NE(message.find("use --backend cpu"), std::string::npos) << message;
  }
  EXPECT_THROW(require_cuda_backend(), InputError);
}

}  // namespace
}  // namespace pipeplan::validate
