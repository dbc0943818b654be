// Megatron's --recompute-modules: the names parsed and refused, what each
// module drops from a block's stored activations (closed forms from the
// tensors Korthikanti et al. 2022 Sec. 4.1 count), what its backward
// replays, and the setting carried through plans, plan files and
// Megatron's arguments.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/error.h"
#include "models/layers.h"
#include "models/recompute.h"
#include "planner/plan_file.h"
#include "planner/search/search_space.h"
#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::models {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_recompute_modules(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(RecomputeModules, ParsesMegatronsNamesInAnyOrder) {
  EXPECT_EQ(parse_recompute_modules("core_attn"), kCoreAttention);
  EXPECT_EQ(parse_recompute_modules("layernorm,moe_act"), kLayerNorm | kMoeActivation);
  EXPECT_EQ(parse_recompute_modules("moe_act layernorm"), kLayerNorm | kMoeActivation);  // Megatron's spelling
  EXPECT_EQ(recompute_modules_name(kLayerNorm | kMoeActivation | kCoreAttention), "core_attn,moe_act,layernorm");
  EXPECT_EQ(recompute_label(Recompute::kSelective, kDefaultRecomputeModules), "selective");
  EXPECT_EQ(recompute_label(Recompute::kSelective, kMoeActivation), "selective:moe_act");
  EXPECT_EQ(recompute_label(Recompute::kFull, kMoeActivation), "full");
}

TEST(RecomputeModules, RefusesUnknownUnpricedRepeatedAndEmpty) {
  EXPECT_NE(parse_error("mlp").find("not priced here"), std::string::npos) << parse_error("mlp");
  EXPECT_NE(parse_error("shared_experts").find("not priced here"), std::string::npos);
  EXPECT_NE(parse_error("attn").find("'attn': not a recompute module"), std::string::npos) << parse_error("attn");
  EXPECT_NE(parse_error("moe_act,moe_act").find("named twice"), std::string::npos);
  EXPECT_NE(parse_error(",").find("an empty module name"), std::string::npos);
  EXPECT_NE(parse_error("layernorm,").find("an empty module name"), std::string::npos);
  EXPECT_NE(parse_error("").find("is empty"), std::string::npos);
}

TrainingShape selective(unsigned modules, int tp = 1, bool sp = false) {
  TrainingShape shape;
  shape.seq_len = 4096;
  shape.micro_batch_size = 1;
  shape.tp = tp;
  shape.sequence_parallel = sp;
  shape.recompute = Recompute::kSelective;
  shape.recompute_modules = modules;
  return shape;
}

LayerCost block_of(const ModelConfig& model, TrainingShape shape, Recompute recompute = Recompute::kSelective) {
  shape.recompute = recompute;
  return expand_layers(model, shape).layers[1];
}

TEST(RecomputeModules, LayernormDropsBothPreNormOutputs) {
  // Llama 3 8B: each half stores its pre-norm's output (the QKV and the
  // gate/up input), 2 bytes x h per token each; with sequence parallelism
  // those are sequence-sharded, so 1/t of it.
  const ModelConfig model = load_model("llama3-8b");
  const std::int64_t tokens = 4096, h = 4096;
  const LayerCost core = block_of(model, selective(kCoreAttention));
  const LayerCost norms = block_of(model, selective(kCoreAttention | kLayerNorm));
  EXPECT_EQ(core.activation_bytes - norms.activation_bytes, tokens * 2 * 2 * h);
  // They are re-made during the backward (its transient bytes); W, which
  // needs them as the QKV and gate/up inputs, keeps them past M_B.
  EXPECT_GE(norms.working_bytes - core.working_bytes, tokens * 2 * 2 * h);
  EXPECT_EQ(norms.weight_grad_bytes, norms.activation_bytes);
  // The backward re-reads each norm's input and rewrites its output.
  EXPECT_DOUBLE_EQ(norms.backward_input.memory_bytes - core.backward_input.memory_bytes,
                   static_cast<double>(tokens) * 2 * 2 * 2 * h);
  const LayerCost core_sp = block_of(model, selective(kCoreAttention, 4, true));
  const LayerCost norms_sp = block_of(model, selective(kCoreAttention | kLayerNorm, 4, true));
  EXPECT_EQ(core_sp.activation_bytes - norms_sp.activation_bytes, tokens * 2 * 2 * h / 4);
}

TEST(RecomputeModules, MoeActDropsEachRoutedPairsActivationOutput) {
  // Mixtral 8x7B, top-2, SwiGLU experts of 14336: per token, 2 routed
  // pairs, each keeping fc2's input (14336 bf16 values) that moe_act
  // recomputes from fc1's output; the backward replays the activation
  // (gate and up read, output written: 3 x 14336 x 2 bytes per pair).
  const ModelConfig model = load_model("mixtral-8x7b");
  const std::int64_t tokens = 4096;
  const LayerCost core = block_of(model, selective(kCoreAttention));
  const LayerCost act = block_of(model, selective(kCoreAttention | kMoeActivation));
  EXPECT_EQ(core.activation_bytes - act.activation_bytes, tokens * 2 * 2 * 14336);
  EXPECT_DOUBLE_EQ(act.backward_input.memory_bytes - core.backward_input.memory_bytes,
                   static_cast<double>(tokens) * 2 * 3 * 2 * 14336);
  // A dense model has no routed experts: moe_act is refused, not ignored.
  const ModelConfig dense = load_model("llama3-8b");
  EXPECT_THROW(block_of(dense, selective(kCoreAttention | kMoeActivation)), InputError);
}

TEST(RecomputeModules, WithoutCoreAttentionTheScoresStay) {
  // Without flash attention the scores are most of a block's bytes: only
  // core_attn drops them and replays the attention core.
  const ModelConfig model = load_model("gpt3-175b");
  TrainingShape shape = selective(kCoreAttention);
  shape.flash_attention = false;
  const LayerCost core = block_of(model, shape);
  shape.recompute_modules = kLayerNorm;
  const LayerCost norms = block_of(model, shape);
  const LayerCost none = block_of(model, shape, Recompute::kNone);
  EXPECT_LT(core.activation_bytes, norms.activation_bytes);
  EXPECT_LT(norms.activation_bytes, none.activation_bytes);
  EXPECT_GT(core.recompute_flops, 0.0);
  EXPECT_EQ(norms.recompute_flops, 0.0);
  EXPECT_TRUE(norms.backward_input.attention.size() == none.backward_input.attention.size());
}

TEST(RecomputeModulesPlan, SearchedSelectiveRecomputesTheExpertsForMixturesOfExperts) {
  planner::PlanRequest request;
  request.model = load_model("mixtral-8x7b");
  std::vector<planner::RecomputeChoice> choices = planner::recompute_choices(request);
  // none, selective, full, and per stage (selective stages with the same modules).
  ASSERT_EQ(choices.size(), 4u);
  EXPECT_EQ(choices[1].recompute, Recompute::kSelective);
  EXPECT_EQ(choices[1].modules, kCoreAttention | kMoeActivation | kLayerNorm);
  EXPECT_TRUE(choices[3].per_stage);
  EXPECT_EQ(choices[3].modules, choices[1].modules);
  request.model = load_model("llama3-8b");
  choices = planner::recompute_choices(request);
  EXPECT_EQ(choices[1].modules, kDefaultRecomputeModules);
  // Fixed to selective: the same modules the search tries, so fixing the
  // axis to what the search picked keeps the plan.
  request.model = load_model("mixtral-8x7b");
  request.recompute = Recompute::kSelective;
  choices = planner::recompute_choices(request);
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].modules, kCoreAttention | kMoeActivation | kLayerNorm);
  request.recompute_modules = kLayerNorm;
  EXPECT_EQ(planner::recompute_choices(request).front().modules, kLayerNorm);
}

TEST(RecomputeModulesPlan, PlanFileAndMegatronArgumentsCarryTheModules) {
  const std::string plan = testing::temp_path("modules-plan.yaml");
  const testing::CommandResult result = testing::run(
      "plan --model mixtral-8x7b --hardware h100-sxm --gpus 16 --global-batch 64 --seq 4096 --tp 2 --pp 2 "
      "--ep 8 --recompute-modules moe_act,layernorm --verbose --out " +
      plan);
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("recompute selective:moe_act,layernorm"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("--recompute-granularity selective --recompute-modules moe_act layernorm"),
            std::string::npos)
      << result.out;
  const planner::PlanFile file = planner::read_plan_yaml(plan);
  EXPECT_EQ(file.plan.recompute, Recompute::kSelective);
  EXPECT_EQ(file.plan.recompute_modules, kMoeActivation | kLayerNorm);
  // Replayed as planned: the same peak the plan printed.
  const testing::CommandResult replay = testing::run("simulate --plan " + plan);
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE(replay.out.find("recompute selective:moe_act,layernorm"), std::string::npos) << replay.out;
}

TEST(RecomputeModulesPlan, ConflictingOptionsAndFilesAreRefused) {
  testing::CommandResult result = testing::run(
      "plan --model tiny --hardware h100-sxm --gpus 2 --global-batch 8 --seq 128 --recompute full "
      "--recompute-modules layernorm");
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("not with --recompute full"), std::string::npos) << result.err;
  result = testing::run("simulate --model tiny --hardware h100-sxm --pp 2 --seq 128 --recompute-modules mlp");
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("--recompute-modules mlp"), std::string::npos) << result.err;
  // Given, even empty, it is read; moe_act needs experts.
  result = testing::run("model show tiny --recompute-modules ''");
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("--recompute-modules is empty"), std::string::npos) << result.err;
  result = testing::run(
      "plan --model tiny --hardware h100-sxm --gpus 2 --global-batch 8 --seq 128 "
      "--recompute-modules moe_act");
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("model 'tiny' has no experts"), std::string::npos) << result.err;
  // model show says what it costed.
  result = testing::run("model show mixtral-8x7b --seq 4096 --recompute selective --json");
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("\"recompute_modules\": \"core_attn,moe_act,layernorm\""), std::string::npos) << result.out;
  const std::string plan = testing::temp_path("tiny-plan.yaml");
  ASSERT_EQ(testing::run("plan --model tiny --hardware h100-sxm --gpus 2 --global-batch 8 --seq 128 --recompute none "
                         "--out " +
                         plan)
                .code,
            0);
  const std::string text = testing::slurp(plan) + "recompute_modules: layernorm\n";
  const std::string bad = testing::write_temp("bad-modules-plan.yaml", text);
  result = testing::run("simulate --plan " + bad);
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("'recompute_modules' needs 'recompute: selective'"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace pipeplan::models
