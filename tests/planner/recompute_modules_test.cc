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
  EXPECT_EQ(parse_recompute_modules("layernorm moe"), kLayerNorm | kMoe);
  EXPECT_EQ(parse_recompute_modules("shared_experts,mlp"), kMlp | kSharedExperts);
  EXPECT_EQ(recompute_modules_name(kMlp | kMoe | kSharedExperts), "mlp,moe,shared_experts");
  EXPECT_EQ(recompute_label(Recompute::kSelective, kDefaultRecomputeModules), "selective");
  EXPECT_EQ(recompute_label(Recompute::kSelective, kMoeActivation), "selective:moe_act");
  EXPECT_EQ(recompute_label(Recompute::kFull, kMoeActivation), "full");
}

TEST(RecomputeModules, RefusesUnknownUnpricedRepeatedAndEmpty) {
  EXPECT_EQ(parse_error("mla_up_proj"), "");
  EXPECT_NE(parse_error("mhc").find("'mhc': not a recompute module; use core_attn"), std::string::npos)
      << parse_error("mhc");
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

LayerCost layer_of(const ModelConfig& model, TrainingShape shape, int index) {
  return expand_layers(model, shape).layers[static_cast<std::size_t>(index)];
}

// Megatron's mlp module (transformer_layer.py, recompute_mlp): a dense
// layer's MLP kept by its input and run again in the backward. Llama 3 8B,
// SwiGLU of 14336: it drops the gate and up outputs and fc2's input (3 x
// 14336 bf16 values per token), replays the three GEMMs (2 x 3 x h x ffn
// FLOPs per token) and the activation (3 x 14336 x 2 bytes read and
// written); with t = 4 and sequence parallelism, a quarter, and fc1's
// all-gather and fc2's reduce-scatter again.
TEST(RecomputeModules, MlpDropsTheDenseMlpAndReplaysItsGemms) {
  const ModelConfig model = load_model("llama3-8b");
  const std::int64_t tokens = 4096, h = 4096, ffn = 14336;
  const LayerCost none = block_of(model, selective(kCoreAttention), Recompute::kNone);
  const LayerCost mlp = block_of(model, selective(kMlp));
  EXPECT_EQ(none.activation_bytes - mlp.activation_bytes, tokens * 3 * ffn * 2);
  EXPECT_DOUBLE_EQ(mlp.recompute_flops, 2.0 * tokens * h * ffn * 3);
  EXPECT_DOUBLE_EQ(mlp.backward_input.memory_bytes - none.backward_input.memory_bytes,
                   static_cast<double>(tokens) * 3 * ffn * 2);
  const LayerCost none_sp = block_of(model, selective(kCoreAttention, 4, true), Recompute::kNone);
  const LayerCost mlp_sp = block_of(model, selective(kMlp, 4, true));
  EXPECT_EQ(none_sp.activation_bytes - mlp_sp.activation_bytes, tokens * 3 * ffn * 2 / 4);
  EXPECT_DOUBLE_EQ(mlp_sp.backward_input.collective_bytes(CollectiveKind::kAllGather) -
                       none_sp.backward_input.collective_bytes(CollectiveKind::kAllGather),
                   static_cast<double>(tokens) * h * 2);
}

// moe (moe_layer.py, moe_layer_recompute): the whole mixture of experts,
// router, dispatch, experts and combine, run again from its input; it holds
// less than moe_act alone, moe_act adds nothing to it, and its backward
// sends the tokens round the expert-parallel ranks once more.
TEST(RecomputeModules, MoeDropsTheWholeMixtureAndDispatchesAgain) {
  const ModelConfig model = load_model("mixtral-8x7b");
  TrainingShape shape = selective(kMoeActivation, 2, true);
  shape.dp = 4;
  shape.ep = 8;
  shape.etp = 1;
  const LayerCost act = block_of(model, shape);
  shape.recompute_modules = kMoe;
  const LayerCost moe = block_of(model, shape);
  shape.recompute_modules = kMoe | kMoeActivation;
  const LayerCost both = block_of(model, shape);
  EXPECT_LT(moe.activation_bytes, act.activation_bytes);
  EXPECT_EQ(both.activation_bytes, moe.activation_bytes);
  EXPECT_EQ(both.backward_input, moe.backward_input);
  ASSERT_FALSE(moe.forward.expert_collectives.empty());
  EXPECT_EQ(moe.backward_input.expert_collectives.size(), 2 * act.backward_input.expert_collectives.size());
  // Its replayed FLOPs are the MLP half's forward (router and experts):
  // every forward GEMM after attention's two (QKV and the output projection).
  double mlp_half = 0;
  for (std::size_t g = 2; g < moe.forward.gemms.size(); ++g) {
    mlp_half += moe.forward.gemms[g].flops() * moe.forward.gemms[g].count;
  }
  EXPECT_DOUBLE_EQ(moe.recompute_flops, mlp_half);
}

// shared_experts (shared_experts.py): DeepSeek-V3's one shared expert of
// 2048 (SwiGLU) on an expert layer: 3 x 2048 values per token dropped, its
// three GEMMs (2 x 3 x 7168 x 2048 FLOPs per token) replayed; layer 4 is
// the first with experts (3 dense layers first).
TEST(RecomputeModules, SharedExpertsDropsTheSharedExpertsAlone) {
  const ModelConfig model = load_model("deepseek-v3");
  const std::int64_t tokens = 4096;
  const LayerCost core = layer_of(model, selective(kCoreAttention), 4);
  const LayerCost shared = layer_of(model, selective(kCoreAttention | kSharedExperts), 4);
  EXPECT_EQ(core.activation_bytes - shared.activation_bytes, tokens * 3 * 2048 * 2);
  EXPECT_DOUBLE_EQ(shared.recompute_flops - core.recompute_flops, 2.0 * tokens * 7168 * 2048 * 3);
  // Dense layers of the same model take mlp; its expert layers do not (Megatron skips them).
  EXPECT_GT(layer_of(model, selective(kMlp), 1).recompute_flops, 0.0);
  EXPECT_EQ(layer_of(model, selective(kMlp), 4).recompute_flops, 0.0);
}

// mla_up_proj (multi_latent_attention.py, recompute_up_proj): DeepSeek-V3's
// 128 heads keep Q and K of 128 + 64 and V of 128 per head only through the
// attention core; the backward makes them again from the latents by the
// query's 1536 -> 128 x 192 and the key-value 512 -> 128 x 256
// up-projections. Layer 1 is dense: the attention is the same.
TEST(RecomputeModules, MlaUpProjDropsQueryKeyAndValueAndReplaysTheUpProjections) {
  const ModelConfig model = load_model("deepseek-v3");
  const std::int64_t tokens = 4096;
  const LayerCost core = layer_of(model, selective(kCoreAttention), 1);
  const LayerCost up = layer_of(model, selective(kCoreAttention | kMlaUpProj), 1);
  EXPECT_EQ(core.activation_bytes - up.activation_bytes, tokens * 128 * (2 * 192 + 128) * 2);
  EXPECT_DOUBLE_EQ(up.recompute_flops - core.recompute_flops,
                   2.0 * tokens * (1536.0 * 128 * 192 + 512.0 * 128 * 256));
  EXPECT_EQ(recompute_modules_refusal(load_model("llama3-8b"), kMlaUpProj),
            "--recompute-modules mla_up_proj: model 'llama3-8b' has no latent attention; its modules are core_attn, "
            "layernorm, mlp");
}

TEST(RecomputeModules, AModuleTheModelLacksIsRefusedNamingItsModules) {
  EXPECT_EQ(recompute_modules_refusal(load_model("llama3-8b"), kMlp | kLayerNorm), "");
  EXPECT_EQ(recompute_modules_refusal(load_model("llama3-8b"), kMoe),
            "--recompute-modules moe: model 'llama3-8b' has no experts; its modules are core_attn, layernorm, mlp");
  EXPECT_EQ(recompute_modules_refusal(load_model("mixtral-8x7b"), kMlp | kMoe),
            "--recompute-modules mlp: model 'mixtral-8x7b' has experts on every layer (no dense MLP); its modules "
            "are core_attn, moe_act, layernorm, moe");
  EXPECT_EQ(recompute_modules_refusal(load_model("mixtral-8x7b"), kSharedExperts),
            "--recompute-modules shared_experts: model 'mixtral-8x7b' has no shared experts; its modules are "
            "core_attn, moe_act, layernorm, moe");
  EXPECT_EQ(recompute_modules_refusal(load_model("deepseek-v3"), kMlp | kMoe | kSharedExperts), "");
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
  result = testing::run("simulate --model tiny --hardware h100-sxm --pp 2 --seq 128 --recompute-modules moe");
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("--recompute-modules moe: model 'tiny' has no experts; its modules are core_attn, "
                            "layernorm, mlp"),
            std::string::npos)
      << result.err;
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
