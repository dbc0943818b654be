// Profiling one rank of a tensor-parallel group: the shard's sizes as
// Megatron divides them, its FLOPs in closed form, and the profile the
// planner takes at that t (and refuses at another).
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/time_model.h"
#include "models/training_shape.h"
#include "profiler/layer_profiler.h"
#include "profiler/tensor_parallel_shard.h"
#include "step/profile_costs.h"

namespace pipeplan::profiler {
namespace {

std::string error_of(const models::ModelConfig& model, int tp) {
  try {
    tensor_parallel_shard(model, tp);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(TensorParallelShard, DividesHeadsGroupsMlpAndVocabulary) {
  // Llama 3 70B at t = 8 (hidden 8192, 64 heads of 128, 8 groups, SwiGLU
  // 28672, vocabulary 128256): 8 heads, 1 group, 3584 units, 16032 rows.
  const models::ModelConfig model = models::load_model("llama3-70b");
  const models::ModelConfig shard = tensor_parallel_shard(model, 8);
  EXPECT_EQ(shard.name, model.name);
  EXPECT_EQ(shard.hidden, 8192);
  EXPECT_EQ(shard.heads, 8);
  EXPECT_EQ(shard.kv_heads, 1);
  EXPECT_EQ(shard.head_dim, 128);
  EXPECT_EQ(shard.ffn, 3584);
  EXPECT_EQ(shard.vocab, 16032);
  EXPECT_EQ(shard.layers, model.layers);
  // A vocabulary t does not divide is padded up, as Megatron pads it.
  EXPECT_EQ(tensor_parallel_shard(models::load_model("gpt2-small"), 4).vocab, (50257 + 3) / 4);
}

TEST(TensorParallelShard, RefusesWhatTDoesNotDivideNamingTheField) {
  const models::ModelConfig tiny = models::load_model("tiny");  // 4 heads, 2 groups
  EXPECT_NE(error_of(tiny, 3).find("heads = 4"), std::string::npos) << error_of(tiny, 3);
  EXPECT_NE(error_of(tiny, 4).find("kv_heads = 2"), std::string::npos) << error_of(tiny, 4);
  EXPECT_NE(error_of(tiny, 0).find("--tp must be >= 1"), std::string::npos);
  EXPECT_NE(error_of(models::load_model("mixtral-8x7b"), 2).find("dense models"), std::string::npos);
  EXPECT_EQ(error_of(tiny, 2), "");
}

TEST(TensorParallelShard, AProfiledShardCountsOneRanksFlops) {
  // tiny at t = 2: h = 64, 2 heads of 16, 1 group, SwiGLU 128 per rank. Per
  // token the linears do 2 (h (2 d + 2 d) + 2 d h + 3 h 128) FLOPs forward;
  // attention 4 s d per head (as tests/profiler/profile_test.cc counts it at t = 1).
  ProfileRequest request;
  request.model = models::load_model("tiny");
  request.tp = 2;
  request.seq_lens = {32};
  request.warmup = 0;
  request.repeats = 1;
  const models::Profile profile = profile_layers_cpu(request);
  EXPECT_EQ(profile.tp, 2);
  EXPECT_EQ(profile.model, "tiny");
  bool seen = false;
  for (const models::LayerMeasurement& m : profile.layers) {
    if (m.layer != "transformer") continue;
    seen = true;
    const double tokens = m.tokens(), s = m.seq_len;
    const double linear = 2.0 * (64 * (32 + 2 * 1 * 16) + 32 * 64 + 3 * 64 * 128) * tokens;
    const double attention = 4.0 * s * 16 * 2 * tokens;
    EXPECT_DOUBLE_EQ(m.forward_flops, linear + attention);
    EXPECT_DOUBLE_EQ(m.backward_weight_flops, linear);
  }
  EXPECT_TRUE(seen);
  // The planner takes it for a run at t = 2 and refuses it at t = 1.
  models::TrainingShape shape;
  shape.micro_batch_size = 1;
  shape.seq_len = 32;
  shape.tp = 2;
  models::ModelLayers layers = models::expand_layers(request.model, shape);
  const models::HardwareConfig hardware = models::load_hardware("h100-sxm");
  const step::ProfiledCosts costs = step::apply_profile(profile, "tiny", shape, hardware, layers);
  // The measured shard plus the collectives it ran without, as the time
  // model exposes them on that hardware.
  const models::LayerCost& block = layers.layers[1];
  const models::LayerMeasurement& measured = profile.layers[1];
  ASSERT_EQ(measured.layer, "transformer");
  const double forward_comm = models::pass_terms(block.forward, hardware, shape).tp_comm_s;
  EXPECT_GT(forward_comm, 0.0);
  EXPECT_DOUBLE_EQ(costs.times[1].forward_s, measured.forward.median_s + forward_comm);
  EXPECT_DOUBLE_EQ(
      costs.times[1].backward_input_s,
      measured.backward_input.median_s + models::pass_terms(block.backward_input, hardware, shape).tp_comm_s);
  EXPECT_DOUBLE_EQ(costs.times[1].backward_weight_s, measured.backward_weight.median_s);
  // It measured its shard without sequence parallelism.
  shape.sequence_parallel = true;
  EXPECT_THROW(step::apply_profile(profile, "tiny", shape, hardware, layers), InputError);
  shape.sequence_parallel = false;
  shape.tp = 1;
  EXPECT_THROW(step::apply_profile(profile, "tiny", shape, hardware, layers), InputError);
}

}  // namespace
}  // namespace pipeplan::profiler
