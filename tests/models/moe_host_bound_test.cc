// Dropless routing's host sync: an MoE layer's pass takes at least the
// host's time to issue it (runtime.moe_layer_host). Checked against the
// closed form max(layer_overhead, host - kernels) on Qwen3-235B-A22B's
// layers (configs/models/qwen3-235b-a22b.yaml: 128 experts, top-8); a
// dense layer, with nothing to sync, pays the fixed overhead alone.
#include <gtest/gtest.h>

#include <utility>

#include "models/hardware.h"
#include "models/layers.h"
#include "models/recompute.h"
#include "models/time_model.h"

namespace pipeplan::models {
namespace {

TrainingShape qwen3_shape(int tp) {
  TrainingShape shape;
  shape.seq_len = 4096;
  shape.tp = tp;
  shape.sequence_parallel = true;
  shape.dp = 8;
  shape.ep = 8;
  shape.etp = 1;
  return shape;
}

LayerCost first_block(const ModelLayers& layers) { return layers.layers[1]; }  // after the embedding

TEST(MoeHostBound, APassTakesAtLeastTheHostsTime) {
  const ModelConfig model = load_model("qwen3-235b-a22b");
  HardwareConfig h100 = load_hardware("h100-sxm");
  h100.moe_layer_host_s = 0.02;  // above every pass's kernels: the bound binds
  const TrainingShape shape = qwen3_shape(4);
  const LayerCost layer = first_block(expand_layers(model, shape));
  const LayerTimes times = layer_times(layer, h100, shape);
  ASSERT_LT(times.forward_s, 0.02);
  const LayerOverheads overheads = layer_overheads(layer, times, h100, shape);
  EXPECT_DOUBLE_EQ(overheads.forward_s, 0.02 - times.forward_s);
  EXPECT_DOUBLE_EQ(overheads.backward_s, 0.02 - times.backward_input_s - times.backward_weight_s);
  EXPECT_DOUBLE_EQ(overheads.forward_host_s, overheads.forward_s - h100.layer_overhead_s);
  // The pass with its overhead: the host's time, whatever the kernels.
  EXPECT_DOUBLE_EQ(times.forward_s + overheads.forward_s, 0.02);

  // A host faster than the kernels: the fixed overhead alone.
  h100.moe_layer_host_s = 1e-4;
  const LayerOverheads fast = layer_overheads(layer, times, h100, shape);
  EXPECT_DOUBLE_EQ(fast.forward_s, h100.layer_overhead_s);
  EXPECT_DOUBLE_EQ(fast.backward_s, h100.layer_overhead_s);
  EXPECT_EQ(fast.forward_host_s, 0);
}

// Half the GPU work per pass at TP 4 than at TP 2: the shipped H100 host
// (4.9 ms) leaves that much more of each pass exposed.
TEST(MoeHostBound, TheHostWaitGrowsAsTheGpuWorkShrinks) {
  const ModelConfig model = load_model("qwen3-235b-a22b");
  const HardwareConfig h100 = load_hardware("h100-sxm");
  ASSERT_GT(h100.moe_layer_host_s, 0);
  const auto at = [&](int tp) {
    const TrainingShape shape = qwen3_shape(tp);
    const LayerCost layer = first_block(expand_layers(model, shape));
    const LayerTimes times = layer_times(layer, h100, shape);
    return std::pair{times, layer_overheads(layer, times, h100, shape)};
  };
  const auto [tp2_times, tp2] = at(2);
  const auto [tp4_times, tp4] = at(4);
  EXPECT_LT(tp4_times.forward_s, tp2_times.forward_s);
  EXPECT_GT(tp4.forward_host_s, tp2.forward_host_s);
  EXPECT_NEAR(tp4.forward_host_s - tp2.forward_host_s, tp2_times.forward_s - tp4_times.forward_s, 1e-12);
}

// A capacity factor still syncs (Megatron-core's all-to-all dispatcher sizes
// its output on the host then too); a dense layer has no router.
TEST(MoeHostBound, EveryRouterSyncsNoDenseLayerDoes) {
  HardwareConfig h100 = load_hardware("h100-sxm");
  h100.moe_layer_host_s = 0.02;
  TrainingShape capped = qwen3_shape(4);
  capped.routing.capacity_factor = 1.0;
  const LayerCost moe = first_block(expand_layers(load_model("qwen3-235b-a22b"), capped));
  const LayerTimes moe_times = layer_times(moe, h100, capped);
  EXPECT_DOUBLE_EQ(layer_overheads(moe, moe_times, h100, capped).forward_s, 0.02 - moe_times.forward_s);
  TrainingShape dense_shape = qwen3_shape(4);
  dense_shape.ep = 1;
  dense_shape.etp = 0;
  const LayerCost dense = first_block(expand_layers(load_model("llama3-8b"), dense_shape));
  EXPECT_DOUBLE_EQ(layer_overheads(dense, layer_times(dense, h100, dense_shape), h100, dense_shape).forward_s,
                   h100.layer_overhead_s);
}

// Recomputing the mixture replays the router, and its sync, in the backward.
TEST(MoeHostBound, ARecomputedRouterSyncsTwice) {
  const ModelConfig model = load_model("qwen3-235b-a22b");
  HardwareConfig h100 = load_hardware("h100-sxm");
  h100.moe_layer_host_s = 0.02;
  TrainingShape shape = qwen3_shape(4);
  shape.recompute = Recompute::kSelective;
  shape.recompute_modules = parse_recompute_modules("moe");
  const LayerCost layer = first_block(expand_layers(model, shape));
  ASSERT_GT(layer.recompute.routing_bytes, 0);
  const LayerTimes times = layer_times(layer, h100, shape);
  EXPECT_DOUBLE_EQ(layer_overheads(layer, times, h100, shape).backward_s,
                   2 * 0.02 - times.backward_input_s - times.backward_weight_s);
}

}  // namespace
}  // namespace pipeplan::models
