// The CUDA backend's measurements: the profile of a model's layers (and of
// one rank's tensor-parallel shard), the GEMM sweep and the NCCL link sweep.
// Tests that need a GPU skip themselves where none is found; the refusals
// without one run everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "profiler/backends.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/model_builder.h"
#include "tests/support/cuda_test_support.h"
#include "tests/support/gemm_sweep_checks.h"

namespace pipeplan::profiler {
namespace {

using CpuLayers = std::vector<std::unique_ptr<Layer>>;
using testing::shape_of;
using testing::tiny;

// ---------------------------------------------------------------------------
// The profile and the link sweep.

TEST(CudaProfile, MeasuresEveryLayerKindAndShape) {
  SKIP_WITHOUT_GPU();
  ProfileRequest request;
  request.model = tiny();
  request.micro_batch_sizes = {1, 2};
  request.seq_lens = {128, 256};
  request.warmup = 1;
  request.repeats = 3;
  const models::Profile profile = profile_layers_cuda(request);
  EXPECT_EQ(profile.backend, "cuda");
  EXPECT_EQ(profile.dtype, "bf16");
  EXPECT_EQ(profile.device, cuda_device_name(0));
  ASSERT_EQ(profile.layers.size(), 2u * 2u * 3u);
  const char* kinds[] = {"embedding", "transformer", "output"};
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const models::LayerMeasurement& m = profile.layers[i];
    EXPECT_EQ(m.layer, kinds[i % 3]);  // in the CPU backend's order: b, then s, then kind
    EXPECT_EQ(m.micro_batch_size, i < 6 ? 1 : 2);
    EXPECT_EQ(m.seq_len, i % 6 < 3 ? 128 : 256);
    for (const models::Timing& timing : {m.forward, m.backward_input, m.backward_weight}) {
      EXPECT_EQ(timing.runs, 3);
      EXPECT_GE(timing.min_s, 0.0) << m.layer;
      EXPECT_LE(timing.min_s, timing.median_s);
      EXPECT_LE(timing.median_s, timing.max_s);
    }
    // Every pass runs kernels, except the embedding's I, which only stashes dy.
    EXPECT_GT(m.forward.min_s, 0.0) << m.layer;
    EXPECT_GT(m.backward_weight.min_s, 0.0) << m.layer;
    if (m.layer != "embedding") {
      EXPECT_GT(m.backward_input.min_s, 0.0) << m.layer;
    }
    EXPECT_GT(m.peak_working_bytes, 0) << m.layer;
    const std::int64_t t = m.tokens();
    if (m.layer == "embedding") {
      // F keeps the token ids (fp32); I adds dy (bf16), which W scatters.
      EXPECT_EQ(m.activation_bytes, 4 * t);
      EXPECT_EQ(m.weight_grad_bytes, 4 * t + 2 * t * 64);
    } else {
      // I frees the attention probabilities, or the fp32 softmax over the
      // vocabulary, and keeps only what W multiplies: M_W < M_B from
      // s = 128 on for the block (below, the dy stashes outweigh the
      // probabilities), always for the output layer.
      EXPECT_GT(m.weight_grad_bytes, 0) << m.layer;
      EXPECT_LT(m.weight_grad_bytes, m.activation_bytes) << m.layer << " at s = " << m.seq_len;
    }
  }
  // FLOPs as the CPU backend counts them (b = 2, s = 256: 512 tokens).
  CpuLayers cpu = build_cpu_layers(tiny(), shape_of(2, 256), 1, 2);
  EXPECT_DOUBLE_EQ(profile.layers[10].forward_flops, cpu.front()->forward_flops(512));
  EXPECT_DOUBLE_EQ(profile.layers[10].backward_input_flops, cpu.front()->backward_input_flops(512));
  EXPECT_DOUBLE_EQ(profile.layers[10].backward_weight_flops, cpu.front()->backward_weight_flops(512));
}

TEST(CudaProfile, RefusesShapesThatDoNotFit) {
  SKIP_WITHOUT_GPU();
  ProfileRequest request;
  request.model = tiny();
  request.seq_lens = {1 << 20};  // 4 heads x s^2 bf16 probabilities: 8 TiB
  try {
    profile_layers_cuda(request);
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("lower --seq or --micro-batch-size"), std::string::npos) << error.what();
  }
}

TEST(CudaProfile, AShardCountsWhatTheCpuBackendCounts) {
  SKIP_WITHOUT_GPU();
  // t = 2: one rank's half of the heads, groups, MLP and vocabulary, the
  // same layers the CPU backend runs for the same request.
  ProfileRequest request;
  request.model = tiny();
  request.tp = 2;
  request.seq_lens = {64};
  request.warmup = 0;
  request.repeats = 1;
  const models::Profile gpu = profile_layers_cuda(request);
  const models::Profile cpu = profile_layers_cpu(request);
  EXPECT_EQ(gpu.tp, 2);
  EXPECT_EQ(gpu.software.rfind("CUDA driver ", 0), 0u) << gpu.software;
  ASSERT_EQ(gpu.layers.size(), cpu.layers.size());
  for (std::size_t i = 0; i < gpu.layers.size(); ++i) {
    EXPECT_EQ(gpu.layers[i].layer, cpu.layers[i].layer);
    EXPECT_DOUBLE_EQ(gpu.layers[i].forward_flops, cpu.layers[i].forward_flops) << gpu.layers[i].layer;
    EXPECT_DOUBLE_EQ(gpu.layers[i].backward_weight_flops, cpu.layers[i].backward_weight_flops) << gpu.layers[i].layer;
  }
}

TEST(CudaGemmSweep, TimesEachShapeBelowThePeak) {
  SKIP_WITHOUT_GPU();
  const std::vector<GemmSize> sizes{{256, 512, 1024, ""}, {1024, 1024, 1024, "square"}};
  const GemmSweep sweep = measure_gemms_cuda(sizes, 1, 3);
  EXPECT_EQ(sweep.backend, "cuda");
  EXPECT_EQ(sweep.dtype, "bf16");
  ASSERT_EQ(sweep.shapes.size(), 2u);
  pipeplan::testing::expect_consistent_sweep(sweep, 3);
  // No bf16 tensor core of today reaches 5 PFLOP/s dense.
  for (const GemmMeasurement& g : sweep.shapes) EXPECT_LT(g.flops_per_s(), 5e15);
}

TEST(CudaProfile, WithoutAGpuSaysToUseTheCpuBackend) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  ProfileRequest request;
  request.model = tiny();
  try {
    profile_layers_cuda(request);
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("no CUDA GPU found"), std::string::npos) << message;
    EXPECT_NE(message.find("use --backend cpu"), std::string::npos) << message;
  }
  EXPECT_TRUE(built_with_cuda());
}

TEST(CudaLinks, NeedTwoGpus) {
  if (cuda_device_count() >= 2) GTEST_SKIP() << "two GPUs are present";
  try {
    measure_links_nccl(1 << 20, 1, 2);
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("needs 2 GPUs"), std::string::npos) << error.what();
  }
}

TEST(CudaLinks, SweepsSizesByFourAndFitsTheLink) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "fewer than two GPUs";
  const models::LinkProfile links = measure_links_nccl(1 << 20, 2, 3);
  EXPECT_EQ(links.backend, "nccl");
  ASSERT_EQ(links.sizes.size(), 9u);  // 8 B, 32 B, ..., 512 KiB
  for (std::size_t i = 0; i < links.sizes.size(); ++i) {
    EXPECT_EQ(links.sizes[i].bytes, std::int64_t{8} << (2 * i));
    EXPECT_GT(links.sizes[i].time.median_s, 0.0);
    EXPECT_DOUBLE_EQ(links.sizes[i].busbw, links.sizes[i].algbw);
  }
  EXPECT_GT(links.bandwidth_bytes_per_s, 0.0);
}

}  // namespace
}  // namespace pipeplan::profiler
