// The time model: ring collectives against nccl-tests' bus-bandwidth
// factors, efficiency curves against the H200 measurements in reference.md,
// and a pass's time as the sum of its parts.
#include "models/time_model.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace pipeplan::models {
namespace {

// Round figures so that every expected time below is a hand sum.
HardwareConfig toy_hardware() {
  HardwareConfig hw;
  hw.name = "toy";
  hw.gpu.peak_flops_bf16 = 1e15;
  hw.gpu.memory_bytes = 100'000'000'000;
  hw.gpu.memory_bandwidth = 2e12;
  hw.gpu.matmul = {0.8, 1e10};
  hw.gpu.attention = {0.5, 2e10};
  hw.gpu.memory = {0.9, 1e6};
  hw.gpus_per_node = 8;
  hw.node_link = {400e9, 2e-6};
  hw.network = {50e9, 10e-6};
  return hw;
}

PassWork toy_pass() {
  PassWork pass;
  pass.gemms = {{1e12, 2}, {1e9, 4}};
  pass.attention_flops = 5e11;
  pass.memory_bytes = 1e9;
  pass.tp_all_reduce_bytes = 1e8;
  pass.tp_gather_scatter_bytes = 2e8;
  return pass;
}

// Compute part of toy_pass on toy_hardware, each curve written out:
// efficiency = max * size / (size + half_size).
double toy_compute_s() {
  const double big_gemm = 2 * 1e12 / (1e15 * 0.8 * 1e12 / (1e12 + 1e10));
  const double small_gemm = 4 * 1e9 / (1e15 * 0.8 * 1e9 / (1e9 + 1e10));
  const double attention = 5e11 / (1e15 * 0.5 * 5e11 / (5e11 + 2e10));
  const double memory = 1e9 / (2e12 * 0.9 * 1e9 / (1e9 + 1e6));
  return big_gemm + small_gemm + attention + memory;
}

TEST(TimeModel, RingCollectivesUseNcclTestsBusBandwidthFactors) {
  // nccl-tests (reference.md): busbw = algbw x 2(n-1)/n for all-reduce,
  // x (n-1)/n for all-gather and reduce-scatter. 8 ranks, 1 GB, 450 GB/s.
  const LinkSpec nvlink{450e9, 0};
  EXPECT_DOUBLE_EQ(all_reduce_s(1e9, 8, nvlink), 2.0 * 7 / 8 * 1e9 / 450e9);
  EXPECT_DOUBLE_EQ(all_gather_s(1e9, 8, nvlink), 7.0 / 8 * 1e9 / 450e9);
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, 8, nvlink), 7.0 / 8 * 1e9 / 450e9);
  // Bus bandwidth recovered from the time equals the link's.
  EXPECT_DOUBLE_EQ(1e9 / all_reduce_s(1e9, 8, nvlink) * 2 * 7 / 8, 450e9);
}

TEST(TimeModel, RingCollectivesPayLatencyPerStep) {
  const LinkSpec link{100e9, 3e-6};
  EXPECT_DOUBLE_EQ(all_reduce_s(1e8, 4, link), 2.0 * 3 / 4 * 1e8 / 100e9 + 2 * 3 * 3e-6);
  EXPECT_DOUBLE_EQ(all_gather_s(1e8, 4, link), 3.0 / 4 * 1e8 / 100e9 + 3 * 3e-6);
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e8, 4, link), 3.0 / 4 * 1e8 / 100e9 + 3 * 3e-6);
}

TEST(TimeModel, OneRankOrNoBytesCostsNothing) {
  const LinkSpec link{100e9, 3e-6};
  EXPECT_EQ(all_reduce_s(1e9, 1, link), 0.0);
  EXPECT_EQ(all_gather_s(1e9, 1, link), 0.0);
  EXPECT_EQ(reduce_scatter_s(1e9, 0, link), 0.0);
  EXPECT_EQ(all_reduce_s(0, 8, link), 0.0);
}

TEST(TimeModel, EfficiencyAtHalfSizeIsHalfTheMaximum) {
  const GpuSpec& gpu = load_hardware("h200-sxm").gpu;
  for (const EfficiencyCurve& curve : {gpu.matmul, gpu.attention, gpu.memory}) {
    ASSERT_GT(curve.half_size, 0);
    EXPECT_DOUBLE_EQ(curve.at(curve.half_size), curve.max_fraction / 2);
    EXPECT_LT(curve.at(1e3 * curve.half_size), curve.max_fraction);
    EXPECT_GT(curve.at(1e3 * curve.half_size), 0.99 * curve.max_fraction);
  }
}

TEST(TimeModel, LargeGemmOnH200MatchesTheMeasurement) {
  // reference.md: on one H200 a bf16 GEMM of 8192^3 ran at about 790 TFLOP/s.
  const HardwareConfig h200 = load_hardware("h200-sxm");
  PassWork gemm;
  gemm.gemms = {{2.0 * 8192 * 8192 * 8192, 1}};
  const double achieved = gemm.flops() / pass_time_s(gemm, h200, TrainingShape{});
  EXPECT_NEAR(achieved, 790e12, 0.05 * 790e12);
}

TEST(TimeModel, LargeCopyOnH200MatchesTheMeasurement) {
  // reference.md: device-to-device copy on one H200 about 4.3 TB/s, counting
  // bytes read + written; here a 1 GiB copy moves 2 GiB.
  const HardwareConfig h200 = load_hardware("h200-sxm");
  PassWork copy;
  copy.memory_bytes = 2.0 * (1 << 30);
  EXPECT_NEAR(copy.memory_bytes / pass_time_s(copy, h200, TrainingShape{}), 4.3e12, 0.05 * 4.3e12);
}

TEST(TimeModel, PassTimeIsTheHandSum) {
  TrainingShape shape;
  shape.tp = 4;  // fits in the 8-GPU node: NVLink at 400 GB/s, 2 us
  const double all_reduce = 2.0 * 3 / 4 * 1e8 / 400e9 + 2 * 3 * 2e-6;
  // 2e8 bytes of all-gather + reduce-scatter pairs: 2e8 gathered and 2e8 scattered.
  const double gather_scatter = 2 * (3.0 / 4 * 2e8 / 400e9 + 3 * 2e-6);
  EXPECT_NEAR(pass_time_s(toy_pass(), toy_hardware(), shape), toy_compute_s() + all_reduce + gather_scatter,
              1e-12);
}

TEST(TimeModel, PassTermsAreTheHandWorkedParts) {
  TrainingShape shape;
  shape.tp = 4;
  const PassTerms terms = pass_terms(toy_pass(), toy_hardware(), shape);
  EXPECT_NEAR(terms.gemm_s, 2 * 1e12 / (1e15 * 0.8 * 1e12 / (1e12 + 1e10)) + 4 * 1e9 / (1e15 * 0.8 * 1e9 / (1e9 + 1e10)),
              1e-15);
  EXPECT_NEAR(terms.attention_s, 5e11 / (1e15 * 0.5 * 5e11 / (5e11 + 2e10)), 1e-15);
  EXPECT_NEAR(terms.elementwise_s, 1e9 / (2e12 * 0.9 * 1e9 / (1e9 + 1e6)), 1e-15);
  EXPECT_NEAR(terms.tp_comm_s, 2.0 * 3 / 4 * 1e8 / 400e9 + 2 * 3 * 2e-6 + 2 * (3.0 / 4 * 2e8 / 400e9 + 3 * 2e-6), 1e-15);
  EXPECT_EQ(terms.total_s(), pass_time_s(toy_pass(), toy_hardware(), shape));
}

TEST(TimeModel, SequenceParallelPairsMoveWhatAnAllReduceMoves) {
  // Korthikanti et al. 2022: an all-gather + reduce-scatter pair of a payload
  // has the communication volume of an all-reduce of it.
  TrainingShape shape;
  shape.tp = 8;
  PassWork all_reduce;
  all_reduce.tp_all_reduce_bytes = 1e9;
  PassWork pairs;
  pairs.tp_gather_scatter_bytes = 1e9;
  EXPECT_DOUBLE_EQ(pass_time_s(pairs, toy_hardware(), shape), pass_time_s(all_reduce, toy_hardware(), shape));
}

TEST(TimeModel, OneTensorParallelRankAddsNoCollectiveTime) {
  TrainingShape shape;
  shape.tp = 1;
  EXPECT_NEAR(pass_time_s(toy_pass(), toy_hardware(), shape), toy_compute_s(), 1e-12);
}

TEST(TimeModel, TensorParallelAcrossNodesUsesTheNetwork) {
  TrainingShape shape;
  shape.tp = 16;
  PassWork pass;
  pass.tp_all_reduce_bytes = 1e9;
  EXPECT_DOUBLE_EQ(pass_time_s(pass, toy_hardware(), shape), 2.0 * 15 / 16 * 1e9 / 50e9 + 2 * 15 * 10e-6);
}

TEST(TimeModel, LayerTimesAreThePassTimes) {
  LayerCost layer;
  layer.forward = toy_pass();
  layer.backward_input.gemms = {{3e12, 1}};
  layer.backward_weight.memory_bytes = 5e8;
  TrainingShape shape;
  shape.tp = 2;
  const HardwareConfig hw = toy_hardware();
  const LayerTimes times = layer_times(layer, hw, shape);
  EXPECT_DOUBLE_EQ(times.forward_s, pass_time_s(layer.forward, hw, shape));
  EXPECT_DOUBLE_EQ(times.backward_input_s, 3e12 / (1e15 * 0.8 * 3e12 / (3e12 + 1e10)));
  EXPECT_DOUBLE_EQ(times.backward_weight_s, 5e8 / (2e12 * 0.9 * 5e8 / (5e8 + 1e6)));
}

TEST(TimeModel, LinkForGroupPicksNvlinkInsideANode) {
  const HardwareConfig hw = toy_hardware();
  EXPECT_EQ(&link_for_group(hw, 8, 1), &hw.node_link);   // a full node
  EXPECT_EQ(&link_for_group(hw, 4, 2), &hw.node_link);   // spans 8 GPUs
  EXPECT_EQ(&link_for_group(hw, 16, 1), &hw.network);    // two nodes
  EXPECT_EQ(&link_for_group(hw, 2, 8), &hw.network);     // one GPU in each of two nodes
  EXPECT_EQ(&link_for_group(hw, 1, 1), &hw.node_link);
}

TEST(TimeModel, MissingLinkBandwidthIsAnInputError) {
  EXPECT_THROW(all_reduce_s(1e9, 8, LinkSpec{}), InputError);
}

}  // namespace
}  // namespace pipeplan::models
