// --fp8-param-gather: the FP8 layers' weights kept in FP8 alone (Megatron-LM
// arguments.py: "Keep the compute param in fp8 ... and perform the param
// all-gather in fp8"). By hand for Llama 3 8B on two pipeline ranks: 16
// blocks a rank of 4096 x 6144 (QKV) + 4096 x 4096 (output projection) +
// 3 x 4096 x 14336 (SwiGLU) + 2 x 4096 (norms) = 218,112,000 weights.
#include <gtest/gtest.h>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/time_model.h"
#include "step/model_simulation.h"
#include "step/step_overhead.h"

namespace pipeplan::step {
namespace {

models::TrainingShape fp8_shape(bool fp8, bool param_gather) {
  models::TrainingShape shape;
  shape.seq_len = 4096;
  shape.dp = 8;
  shape.zero = models::ZeroStage::kOptimizer;
  shape.pipelined = true;
  models::RuntimeFlags flags;
  flags.fp8 = fp8;
  flags.fp8_param_gather = param_gather;
  shape.apply(flags);
  return shape;
}

std::vector<MemoryBreakdown> rank_memory(const models::TrainingShape& shape) {
  PipelineSetup setup;
  setup.pp = 2;
  setup.microbatches = 8;
  setup.shape = shape;
  return simulate_model(models::load_model("llama3-8b"), models::load_hardware("h100-sxm"), setup).memory;
}

TEST(Fp8Weights, FpEightWeightsDropTheBfSixteenCopy) {
  const std::vector<MemoryBreakdown> bf16 = rank_memory(fp8_shape(false, false));
  const std::vector<MemoryBreakdown> copies = rank_memory(fp8_shape(true, false));
  const std::vector<MemoryBreakdown> fp8_only = rank_memory(fp8_shape(true, true));
  ASSERT_TRUE(fp8_shape(true, true).runtime.fp8_param_gather);
  const std::int64_t block_weights = 16LL * 218'112'000;
  for (std::size_t rank = 0; rank < 2; ++rank) {
    // bf16 weights plus an FP8 copy and its transpose: 4 bytes a block
    // weight; FP8 data and transpose alone: 2, as bf16's.
    EXPECT_EQ(copies[rank].weights - fp8_only[rank].weights, 2 * block_weights);
    EXPECT_EQ(fp8_only[rank].weights, bf16[rank].weights);
    EXPECT_EQ(fp8_only[rank].optimizer, copies[rank].optimizer);  // the fp32 master weights stay
  }
}

TEST(Fp8Weights, TheStepGathersThemInOneByte) {
  const models::HardwareConfig hardware = models::load_hardware("h100-sxm");
  const double params = 1e9, fp8 = 0.8e9;
  models::TrainingShape copies = fp8_shape(true, false);
  models::TrainingShape fp8_only = fp8_shape(true, true);
  const double with_copies = rank_step_overhead({params, 0, fp8}, hardware, copies).gradient_sync_s;
  const double fp8_alone = rank_step_overhead({params, 0, fp8}, hardware, fp8_only).gradient_sync_s;
  const models::LinkSpec link = models::link_for_group(hardware, 8, 1);
  EXPECT_NEAR(with_copies - fp8_alone,
              models::all_gather_s(2 * params, 8, link) - models::all_gather_s(2 * params - fp8, 8, link), 1e-12);
  EXPECT_GT(with_copies, fp8_alone);
}

TEST(Fp8Weights, OnlyWithFpEightAndTheDistributedOptimizer) {
  models::TrainingShape shape = fp8_shape(false, true);
  EXPECT_FALSE(shape.runtime.fp8_param_gather);
  shape = fp8_shape(true, true);
  shape.zero = models::ZeroStage::kNone;
  models::RuntimeFlags flags = shape.runtime;
  shape.apply(flags);
  EXPECT_FALSE(shape.runtime.fp8_param_gather);
}

}  // namespace
}  // namespace pipeplan::step
