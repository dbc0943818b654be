// GEMM time from its shape: wave counts worked by hand on a 132-SM GPU, the
// tile and split a library would pick, the HBM floor, the fixed cost.
#include "models/gemm_time.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "models/hardware.h"

namespace pipeplan::models {
namespace {

constexpr double kRate = 0.8e15;  // peak 1e15 x ceiling 0.8
constexpr double kOverhead = 4e-6;

GpuSpec toy_gpu(std::vector<GemmTile> tiles) {
  GpuSpec gpu;
  gpu.peak_flops_bf16 = 1e15;
  gpu.memory_bandwidth = 2e12;
  gpu.memory = {1.0, 0};
  gpu.matmul = {0.8, kOverhead};
  gpu.sms = 132;
  gpu.gemm_tiles = std::move(tiles);
  return gpu;
}

// One wave: every SM runs one block of rows x columns x depth at 1/132 of the rate.
double wave_s(double rows, double columns, double depth, double share = 1.0) {
  return 2 * rows * columns * depth / (kRate * share / 132);
}

TEST(GemmTime, PartialLastWaveCostsAWholeOne) {
  // GPT-3 175B's QKV at t = 4 on 2048 tokens: [2048 x 12288] x [12288 x 9216].
  // 128 x 256 tiles: 16 x 36 = 576 blocks = 4.36 waves of 132, so 5 waves.
  const GemmTiming timing = gemm_timing({2048, 9216, 12288, 1}, toy_gpu({{128, 256, 1.0}}));
  EXPECT_EQ(timing.blocks, 576);
  EXPECT_EQ(timing.waves, 5);
  EXPECT_EQ(timing.split_k, 1);
  EXPECT_FALSE(timing.memory_bound);
  EXPECT_DOUBLE_EQ(timing.seconds, 5 * wave_s(128, 256, 12288) + kOverhead);
  // 4.36 / 5 of the ceiling.
  const double flops = 2.0 * 2048 * 9216 * 12288;
  EXPECT_NEAR(flops / (timing.seconds - kOverhead) / kRate, 576.0 / 660, 1e-12);
}

TEST(GemmTime, FullWavesRunAtTheCeiling) {
  // 132 x 4 blocks of 128 x 256: [1408 x 12288] with k = 4096, exactly 4 waves.
  const GemmWork gemm{128 * 11, 256 * 48, 4096, 1};
  const GemmTiming timing = gemm_timing(gemm, toy_gpu({{128, 256, 1.0}}));
  EXPECT_EQ(timing.waves, 4);
  EXPECT_NEAR(timing.seconds, gemm.flops() / kRate + kOverhead, 1e-15);
}

TEST(GemmTime, EdgesPadToAWholeTile) {
  // 1000 x 1000 on 128 x 128 tiles: 8 x 8 = 64 blocks, each a full tile.
  const GemmTiming timing = gemm_timing({1000, 1000, 1024, 1}, toy_gpu({{128, 128, 1.0}}));
  EXPECT_EQ(timing.blocks, 64);
  EXPECT_DOUBLE_EQ(timing.seconds, wave_s(128, 128, 1024) + kOverhead);
}

TEST(GemmTime, PicksTheTileThatFinishesFirst) {
  // [1408 x 3328], k = 8192: 128 x 256 gives 11 x 13 = 143 blocks, 2 waves;
  // 128 x 128 at 0.9 of the ceiling gives 286 blocks, 3 waves of half-size
  // blocks: 1.5 / 0.9 = 1.67 big waves against 2.
  const GpuSpec gpu = toy_gpu({{128, 256, 1.0}, {128, 128, 0.9}});
  const GemmTiming timing = gemm_timing({1408, 3328, 8192, 1}, gpu);
  EXPECT_EQ(timing.tile.columns, 128);
  EXPECT_EQ(timing.waves, 3);
  EXPECT_DOUBLE_EQ(timing.seconds, 3 * wave_s(128, 128, 8192, 0.9) + kOverhead);
  // With full waves the bigger, faster tile wins: [1408 x 3072] is 132 blocks of 128 x 256.
  EXPECT_EQ(gemm_timing({1408, 3072, 8192, 1}, gpu).tile.columns, 256);
}

TEST(GemmTime, SmallOutputsSplitTheSum) {
  // One 128 x 256 tile, k = 65536: splitting k over 16 blocks (at most 16,
  // each at least 256 deep) fills 16 SMs; the fp32 partials (16 of 128 x
  // 256) are written and read back once.
  const GemmWork gemm{128, 256, 65536, 1};
  const GemmTiming timing = gemm_timing(gemm, toy_gpu({{128, 256, 1.0}}));
  EXPECT_EQ(timing.split_k, 16);
  EXPECT_EQ(timing.waves, 1);
  const double operands = 2.0 * (128 * 65536 + 65536 * 256 + 128 * 256) / 2e12;
  const double compute = wave_s(128, 256, 65536 / 16);
  const double partials = 2.0 * 4 * 128 * 256 * 16 / 2e12;
  EXPECT_DOUBLE_EQ(timing.seconds, std::max(compute, operands) + partials + kOverhead);
  EXPECT_LT(timing.seconds, wave_s(128, 256, 65536) / 4);
}

TEST(GemmTime, SkinnyGemmsStreamTheWeights) {
  // One token through an 8192 x 8192 weight (a decode step): reading the
  // 128 MiB of bf16 weights at 2 TB/s bounds it, however it is tiled.
  const GemmTiming timing = gemm_timing({1, 8192, 8192, 1}, toy_gpu({{128, 256, 1.0}}));
  EXPECT_TRUE(timing.memory_bound);
  const double stream = 2.0 * (8192 + 8192.0 * 8192 + 8192) / 2e12;
  EXPECT_GE(timing.seconds, stream + kOverhead);
  EXPECT_LT(timing.seconds, 1.01 * stream + kOverhead);
}

TEST(GemmTime, BatchedProblemsShareTheWaves) {
  // 8 problems of one 128 x 256 tile each, too shallow to split: 8 blocks
  // in one wave, one kernel.
  const GemmTiming batched = gemm_timing({128, 256, 256, 1, 8}, toy_gpu({{128, 256, 1.0}}));
  EXPECT_EQ(batched.blocks, 8);
  EXPECT_EQ(batched.waves, 1);
  EXPECT_DOUBLE_EQ(batched.seconds, wave_s(128, 256, 256) + kOverhead);
}

TEST(GemmTime, WithoutSmsAGemmRunsAtTheCeiling) {
  GpuSpec gpu = toy_gpu({});
  gpu.sms = 0;
  const GemmWork gemm{100, 300, 700, 1};
  EXPECT_DOUBLE_EQ(gemm_timing(gemm, gpu).seconds, gemm.flops() / kRate + kOverhead);
}

TEST(GemmTime, Fp8RunsAtTheFp8RateOfTheHardwareFile) {
  // A large compute-bound GEMM on the shipped H100: FP8 takes the BF16
  // time over the ratio of the two rates the file gives (peak x ceiling),
  // its kernel's fixed cost aside.
  const GpuSpec gpu = load_hardware("h100-sxm").gpu;
  GemmWork bf16{8192, 8192, 8192, 1};
  GemmWork fp8 = bf16;
  fp8.fp8 = true;
  const double ratio = gpu.peak_flops_fp8 * gpu.matmul.fp8_share() / (gpu.peak_flops_bf16 * gpu.matmul.max_fraction);
  const double overhead = gpu.matmul.kernel_overhead_s;
  EXPECT_NEAR((gemm_timing(bf16, gpu).seconds - overhead) / (gemm_timing(fp8, gpu).seconds - overhead), ratio, 1e-12);
  // Without an FP8 rate there is no FP8 GEMM.
  EXPECT_THROW(gemm_timing(fp8, load_hardware("a100-80gb").gpu), InputError);
}

TEST(GemmTime, EmptyGemmCostsNothing) {
  EXPECT_EQ(gemm_timing({0, 10, 10, 1}, toy_gpu({{128, 256, 1.0}})).seconds, 0);
}

}  // namespace
}  // namespace pipeplan::models
