#include "planner/frameworks/megatron_bridge_overrides.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <vector>

#include "planner/frameworks/megatron_args.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {
namespace {

std::string yaml_bool(bool value) { return value ? "true" : "false"; }

std::string yaml_count(const std::optional<int>& value) { return value ? std::to_string(*value) : "null"; }

// The split and the chunks per rank; the schedule Megatron-core runs
// follows from them (1F1B, interleaved with more than one chunk).
std::string pipeline_fields(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  std::optional<int> virtual_stages;
  if (plan.pp > 1) {
    const std::string schedule(sim::find_schedule_family(plan.schedule).name);
    const bool runs =
        (schedule == "1F1B" && plan.virtual_stages == 1) || (schedule == "Interleaved1F1B" && plan.virtual_stages > 1);
    if (!runs) {
      refusals.refuse(
          fmt::format("schedule {}: Megatron-core runs 1F1B and interleaved 1F1B only ({}); plan with "
                      "--schedule 1F1B or Interleaved1F1B",
                      schedule, schedule_runners(schedule)));
    }
    if (plan.virtual_stages > 1) virtual_stages = plan.virtual_stages;
  } else if (plan.virtual_stages > 1) {
    refusals.note(
        fmt::format("{} chunks on the one pipeline rank: Megatron-core interleaves only over pipeline "
                    "ranks, so they run as one (fewer passes)",
                    plan.virtual_stages));
  }
  const MegatronPlacement placement = megatron_placement(plan);
  return fmt::format(
      "  pipeline_model_parallel_size: {}\n  virtual_pipeline_model_parallel_size: {}\n"
      "  pipeline_model_parallel_layout: {}\n  num_layers_in_first_pipeline_stage: {}\n"
      "  num_layers_in_last_pipeline_stage: {}\n  account_for_embedding_in_pipeline_split: false\n"
      "  account_for_loss_in_pipeline_split: false\n",
      plan.pp, yaml_count(virtual_stages), placement.layout.empty() ? "null" : fmt::format("\"{}\"", placement.layout),
      yaml_count(placement.first_stage_layers), yaml_count(placement.last_stage_layers));
}

// One recomputation for every stage, the heaviest a per-stage plan has, as
// the Megatron-LM arguments do.
std::string recompute_fields(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  const models::Recompute recompute = uniform_recompute(plan);
  if (!plan.stage_recompute.empty()) {
    refusals.note(
        fmt::format("recompute per stage ({}): Megatron-core sets one recomputation for every stage, so "
                    "this recomputes {} everywhere (slower than planned)",
                    models::stage_recompute_name(plan.stage_recompute), models::recompute_name(recompute)));
  }
  if (plan.recompute_in_bubbles) {
    refusals.note("recomputation in the bubbles: Megatron-core recomputes inside the backward (slower than planned)");
  }
  switch (recompute) {
    case models::Recompute::kNone:
      return "  recompute_granularity: null\n  recompute_method: null\n  recompute_num_layers: null\n"
             "  recompute_modules: null\n";
    case models::Recompute::kSelective:
      return fmt::format(
          "  recompute_granularity: selective\n  recompute_method: null\n  recompute_num_layers: null\n"
          "  recompute_modules: [{}]\n",
          models::recompute_modules_name(plan.recompute_modules, ", "));
    case models::Recompute::kFull: break;
  }
  return "  recompute_granularity: full\n  recompute_method: uniform\n  recompute_num_layers: 1\n"
         "  recompute_modules: null\n";
}

// Megatron-core's MoE fields for the experts' parallelism and dispatch;
// the experts themselves are the recipe's model's.
std::string expert_fields(const PlanCandidate& plan) {
  const bool deepep = plan.routing.dispatcher == models::MoeDispatcher::kDeepEp;
  std::string text = fmt::format(
      "  expert_model_parallel_size: {}\n  expert_tensor_parallel_size: {}\n  moe_token_dispatcher_type: {}\n"
      "{}  moe_grouped_gemm: true\n  moe_expert_capacity_factor: {}\n",
      plan.ep, plan.etp > 0 ? plan.etp : plan.tp, deepep ? "flex" : "alltoall",
      deepep ? "  moe_flex_dispatcher_backend: deepep\n" : "",
      plan.routing.capacity_factor > 0 ? fmt::format("{}", plan.routing.capacity_factor) : "null");
  if (plan.routing.capacity_factor > 0) text += "  moe_token_drop_policy: probs\n";
  return text + fmt::format("  overlap_moe_expert_parallel_comm: {}\n", yaml_bool(plan.runtime.moe_a2a_overlap));
}

// The distributed optimizer is ZeRO-1; ZeRO-2/3 get it as the nearest,
// as in the Megatron-LM arguments.
std::string data_parallel_sections(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  if (plan.zero >= models::ZeroStage::kGradients) {
    refusals.note(fmt::format(
        "ZeRO-{}: Megatron-Bridge shards gradients{} only with Megatron-FSDP (ddp.use_megatron_fsdp), whose "
        "collectives are not the planned ones; the distributed optimizer (ZeRO-1) runs in its place (`pipeplan plan "
        "... --zero 1` gives its figures)",
        static_cast<int>(plan.zero), plan.zero == models::ZeroStage::kWeights ? " and weights" : ""));
  }
  const bool distributed_optimizer = plan.zero != models::ZeroStage::kNone;
  if (plan.runtime.grad_reduce_in_bf16) {
    refusals.note(
        "gradients reduced in bf16: Megatron-Bridge's bf16 mixed_precision recipes set "
        "ddp.grad_reduce_in_fp32 over any override; set grad_reduce_in_fp32 = False on the recipe's "
        "MixedPrecisionConfig in Python");
  }
  if (plan.runtime.optimizer_states_in_bf16) {
    refusals.note(
        "Adam's moments in bf16: set use_precision_aware_optimizer = True with exp_avg_dtype and exp_avg_sq_dtype "
        "torch.bfloat16 on the recipe's OptimizerConfig in Python (dtypes are not YAML overrides)");
  }
  return fmt::format(
      "ddp:\n  use_distributed_optimizer: {0}\n  use_megatron_fsdp: false\n  overlap_grad_reduce: {1}\n"
      "  overlap_param_gather: {2}\n\noptimizer:\n  use_distributed_optimizer: {0}\n  overlap_param_gather: {2}\n",
      yaml_bool(distributed_optimizer), yaml_bool(plan.runtime.overlap_grad_reduce),
      yaml_bool(plan.runtime.overlap_param_gather));
}

}  // namespace

FrameworkConfig megatron_bridge_overrides(const PlanCandidate& plan, int global_batch, int seq_len,
                                          const models::ModelConfig* model) {
  FrameworkRefusals refusals;
  std::string body = fmt::format("model:\n  tensor_model_parallel_size: {}\n  sequence_parallel: {}\n", plan.tp,
                                 yaml_bool(plan.sequence_parallel));
  body += fmt::format("  context_parallel_size: {}\n", plan.cp);
  // Transformer Engine's p2p ring, which the plan costs.
  if (plan.cp > 1) body += "  cp_comm_type: p2p\n";
  body += pipeline_fields(plan, refusals);
  body += fmt::format("  seq_length: {}\n", seq_len);
  body += recompute_fields(plan, refusals);
  body += fmt::format("  tp_comm_overlap: {}\n", yaml_bool(plan.runtime.tp_comm_overlap));
  if (plan.etp > 0 || (model != nullptr && model->moe.enabled())) body += expert_fields(plan);
  body += fmt::format("\ntrain:\n  micro_batch_size: {}\n  global_batch_size: {}\n\ndataset:\n  seq_length: {}\n\n",
                      plan.micro_batch_size, global_batch, seq_len);
  body += data_parallel_sections(plan, refusals);
  body +=
      fmt::format("\ndist:\n  use_megatron_fsdp: false\n  use_tp_pp_dp_mapping: {}\n", yaml_bool(plan.pipeline_first));
  // Megatron-LM's --fp8-format hybrid with its default delayed scaling;
  // that recipe sets fp8_param_gather (Megatron-Bridge mixed_precision.py).
  body +=
      fmt::format("\nmixed_precision: {}\n", plan.runtime.fp8 ? "bf16_with_fp8_delayed_scaling_mixed" : "bf16_mixed");
  if (plan.runtime.fp8 && !plan.runtime.fp8_param_gather) {
    refusals.note(
        "bf16 weights beside FP8 ones: bf16_with_fp8_delayed_scaling_mixed sets fp8_param_gather = True; set it "
        "False on the recipe's MixedPrecisionConfig in Python, or plan with --fp8-param-gather");
  }
  return refusals.finish(
      "# Megatron-Bridge recipe overrides for the plan (ConfigContainer fields of Megatron-Bridge v0.6.0,\n"
      "# src/megatron/bridge/training/config.py), merged over a recipe of this model whose model is a\n"
      "# GPTModelProvider; a recipe that sets comm_overlap applies its own overlap settings over these\n",
      body, "#");
}

}  // namespace pipeplan::planner
