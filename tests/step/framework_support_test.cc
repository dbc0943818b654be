// What each framework runs, rule by rule, on hand-made layouts. Sources:
// Megatron-core schedules.py (get_forward_backward_func; interleaving
// needs m a multiple of the group size p), torch.distributed.pipelining
// schedules.py (looped schedules run max(1, m / p) equal rounds),
// DeepSpeed pipe/engine.py (ZeRO below 2 with pipelining), torchtitan
// parallelize.py (FSDP, or DDP with no other parallelism).
#include "step/framework_support.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace pipeplan::step {
namespace {

models::JobLayout pipeline(const std::string& schedule, int v, int p, int m) {
  models::JobLayout layout;
  layout.pp = p;
  layout.dp = 2;
  layout.schedule = schedule;
  layout.virtual_stages = v;
  layout.microbatches = m;
  layout.zero = models::ZeroStage::kOptimizer;
  return layout;
}

bool runs(Framework framework, const models::JobLayout& layout) {
  return framework_refusal(framework, layout, 4096) == nullptr;
}

TEST(FrameworkSupport, MegatronRunsItsTwoSchedulesOnly) {
  for (Framework megatron : {Framework::kMegatronLm, Framework::kMegatronBridge}) {
    EXPECT_TRUE(runs(megatron, pipeline("1F1B", 1, 4, 8)));
    EXPECT_TRUE(runs(megatron, pipeline("Interleaved1F1B", 3, 4, 8)));
    EXPECT_FALSE(runs(megatron, pipeline("Interleaved1F1B", 3, 4, 10)));  // 10 % 4 != 0
    for (const char* schedule : {"VHalf", "ZBVZeroBubble", "ZBH1", "DualPipeV", "GPipe", "ZBAuto"}) {
      EXPECT_FALSE(runs(megatron, pipeline(schedule, 0, 4, 8))) << schedule;
    }
  }
}

TEST(FrameworkSupport, MegatronShardsWithItsDistributedOptimizerAndRecomputesAlike) {
  models::JobLayout layout = pipeline("1F1B", 1, 1, 8);
  layout.zero = models::ZeroStage::kWeights;
  EXPECT_STREQ(framework_refusal(Framework::kMegatronLm, layout, 4096),
               "ZeRO-2/3 (its distributed optimizer is ZeRO-1)");
  EXPECT_TRUE(runs(Framework::kDeepSpeed, layout));  // ZeRO-3 without pipelining
  EXPECT_TRUE(runs(Framework::kPyTorch, layout));
  layout = pipeline("1F1B", 1, 4, 8);
  layout.stage_recompute = {models::Recompute::kNone, models::Recompute::kFull, models::Recompute::kNone,
                            models::Recompute::kNone};
  EXPECT_FALSE(runs(Framework::kMegatronLm, layout));
  EXPECT_TRUE(runs(Framework::kPyTorch, layout));
  layout.stage_recompute.clear();
  layout.recompute = models::Recompute::kFull;
  layout.recompute_in_bubbles = true;
  for (const FrameworkInfo& info : frameworks()) EXPECT_FALSE(runs(info.id, layout)) << info.key;
}

TEST(FrameworkSupport, TorchtitanShardsWithFsdpAndSplitsNormsAlongTheSequence) {
  models::JobLayout layout = pipeline("ZBVZeroBubble", 2, 4, 8);
  EXPECT_FALSE(runs(Framework::kTorchtitan, layout));  // ZeRO-1
  layout.zero = models::ZeroStage::kGradients;
  EXPECT_TRUE(runs(Framework::kTorchtitan, layout));
  layout.zero = models::ZeroStage::kWeights;  // reshards under pipelining only with ZeRO-2's timing
  EXPECT_FALSE(runs(Framework::kTorchtitan, layout));
  layout.zero = models::ZeroStage::kGradients;
  layout.tp = 2;
  EXPECT_FALSE(runs(Framework::kTorchtitan, layout));  // no sequence parallelism
  layout.sequence_parallel = true;
  EXPECT_TRUE(runs(Framework::kTorchtitan, layout));
  layout.recompute = models::Recompute::kSelective;
  EXPECT_FALSE(runs(Framework::kTorchtitan, layout));
  layout.recompute = models::Recompute::kFull;
  EXPECT_TRUE(runs(Framework::kTorchtitan, layout));
  layout.pipeline_first = true;
  EXPECT_FALSE(runs(Framework::kTorchtitan, layout));
  // DDP alone: no other parallelism.
  models::JobLayout ddp;
  ddp.dp = 8;
  EXPECT_TRUE(runs(Framework::kTorchtitan, ddp));
  ddp.zero = models::ZeroStage::kOptimizer;
  EXPECT_FALSE(runs(Framework::kTorchtitan, ddp));
}

TEST(FrameworkSupport, PyTorchLoopedSchedulesRunEqualRounds) {
  // m = 9 on p = 4: max(1, 9 / 4) = 2 rounds, which 9 does not fill equally.
  EXPECT_FALSE(runs(Framework::kPyTorch, pipeline("Interleaved1F1B", 2, 4, 9)));
  EXPECT_TRUE(runs(Framework::kPyTorch, pipeline("Interleaved1F1B", 2, 4, 10)));
  EXPECT_TRUE(runs(Framework::kPyTorch, pipeline("Interleaved1F1B", 2, 4, 6)));  // one round
  EXPECT_FALSE(runs(Framework::kPyTorch, pipeline("ZBH1", 1, 4, 8)));
  EXPECT_TRUE(runs(Framework::kPyTorch, pipeline("ZBAuto", 1, 4, 8)));  // its CSV runtime
}

TEST(FrameworkSupport, DeepSpeedPipelinesOneChunkWithZeroOneAtMost) {
  models::JobLayout layout = pipeline("1F1B", 1, 4, 8);
  EXPECT_TRUE(runs(Framework::kDeepSpeed, layout));
  layout.zero = models::ZeroStage::kGradients;
  EXPECT_FALSE(runs(Framework::kDeepSpeed, layout));
  EXPECT_FALSE(runs(Framework::kDeepSpeed, pipeline("Interleaved1F1B", 2, 4, 8)));
  layout = pipeline("1F1B", 1, 4, 8);
  layout.cp = 2;
  EXPECT_FALSE(runs(Framework::kDeepSpeed, layout));
}

TEST(FrameworkSupport, TheSetOfRunnersMatchesEachRule) {
  const models::JobLayout layout = pipeline("VHalf", 2, 4, 8);
  const FrameworkSet set = frameworks_running(layout, 4096);
  for (const FrameworkInfo& info : frameworks()) {
    EXPECT_EQ((set & framework_bit(info.id)) != 0, runs(info.id, layout)) << info.key;
  }
  EXPECT_EQ(set, framework_bit(Framework::kPyTorch));
}

TEST(FrameworkSupport, NamesParseWhateverTheCaseAndTheRestAreRefused) {
  EXPECT_EQ(parse_framework("Megatron-LM"), Framework::kMegatronLm);
  EXPECT_EQ(parse_framework("any"), Framework::kAny);
  try {
    parse_framework("megatron");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("megatron-lm, megatron-bridge, torchtitan, deepspeed, pytorch or any"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace pipeplan::step
