// Multi-token prediction (Megatron-core's multi_token_prediction.py;
// DeepSeek-V3 report Sec. 2.2) on DeepSeek-V3's shapes (configs/models/
// deepseek-v3.yaml: hidden 7168, vocab 129280, one MTP module): what the
// module adds to the output layer, worked by hand, and the refusals.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/layers.h"
#include "models/model_config.h"

namespace pipeplan::models {
namespace {

constexpr double kHidden = 7168, kVocab = 129280;

// 4096 tokens on t = 1, the experts over ep = d = 8.
TrainingShape deepseek_shape(int mtp_layers) {
  TrainingShape shape;
  shape.dp = shape.ep = 8;
  shape.etp = 1;
  shape.mtp_layers = mtp_layers;
  shape.seq_len = 4096;
  return shape;
}

TEST(MtpLayers, OneModuleAddsItsProjectionABlockAndTheHeadsWork) {
  const ModelConfig model = load_model("deepseek-v3");
  ASSERT_EQ(model.mtp_layers, 1);
  const ModelLayers plain = expand_layers(model, deepseek_shape(0));
  const ModelLayers with = expand_layers(model, deepseek_shape(1));
  ASSERT_EQ(with.layers.size(), plain.layers.size());  // the module runs within the output layer
  const LayerCost& block = plain.layers[plain.layers.size() - 2];  // an MoE block, like the module's
  const LayerCost& output = plain.layers.back();
  const LayerCost& output_mtp = with.layers.back();
  EXPECT_EQ(output_mtp.mtp_blocks, 1);
  // Parameters: two input norms, eh_proj (2h x h), the block, a final norm;
  // on this rank also the embedding's copy. The head is the model's.
  const double own = 3 * kHidden + 2 * kHidden * kHidden;
  EXPECT_EQ(output_mtp.params - output.params, static_cast<std::int64_t>(own) + block.params);
  EXPECT_EQ(output_mtp.params_per_rank - output.params_per_rank,
            static_cast<std::int64_t>(own + kVocab * kHidden) + block.params_per_rank);
  EXPECT_EQ(with.total_params - plain.total_params, static_cast<std::int64_t>(own) + block.params);
  // Forward FLOPs: eh_proj over 4096 tokens, the block's, the head's again.
  const double tokens = 4096;
  EXPECT_NEAR(output_mtp.forward.flops() - output.forward.flops(),
              2 * tokens * 2 * kHidden * kHidden + block.forward.flops() + output.forward.flops(),
              1e-9 * output_mtp.forward.flops());
  // The head's fp32 logits twice; the block's activations beside them.
  EXPECT_EQ(output_mtp.logits_bytes, 2 * output.logits_bytes);
  EXPECT_GT(output_mtp.activation_bytes, output.activation_bytes + block.activation_bytes + output.logits_bytes);
  // The block's routing comes along (its host sync, its all-to-alls).
  EXPECT_EQ(output_mtp.forward.routing_bytes, block.forward.routing_bytes);
  EXPECT_EQ(output_mtp.forward.expert_collectives.size(), block.forward.expert_collectives.size());
}

std::string refusal(const std::string& model, TrainingShape shape) {
  try {
    expand_layers(load_model(model), shape);
  } catch (const InputError& error) {
    return error.what();
  }
  return "accepted";
}

TEST(MtpLayers, RefusedBeyondTheModelsModulesAndWithContextParallelism) {
  TrainingShape dense;
  dense.seq_len = 4096;
  dense.mtp_layers = 1;
  EXPECT_NE(refusal("llama3-8b", dense).find("--mtp-layers 1: model 'llama3-8b' has no multi-token prediction module"),
            std::string::npos);
  EXPECT_NE(refusal("deepseek-v3", deepseek_shape(2)).find("has 1 multi-token prediction module(s); give 1 to 1"),
            std::string::npos);
  TrainingShape ring = deepseek_shape(1);
  ring.cp = 2;
  EXPECT_NE(refusal("deepseek-v3", ring).find("--mtp-layers with --cp 2"), std::string::npos);
}

TEST(MtpLayers, TheHuggingFaceConfigGivesTheModules) {
  EXPECT_EQ(load_model(std::string(PIPEPLAN_CONFIG_DIR) + "/hf/DeepSeek-V3/config.json").mtp_layers, 1);
  EXPECT_EQ(load_model("llama3-8b").mtp_layers, 0);
}

}  // namespace
}  // namespace pipeplan::models
