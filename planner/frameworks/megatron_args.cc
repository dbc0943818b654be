#include "planner/frameworks/megatron_args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/generators/registry.h"

namespace pipeplan::planner {
namespace {

std::string placement_arguments(const PlanCandidate& plan) {
  const MegatronPlacement placement = megatron_placement(plan);
  std::string args;
  if (placement.first_stage_layers) {
    args += fmt::format(" --decoder-first-pipeline-num-layers {}", *placement.first_stage_layers);
  }
  if (placement.last_stage_layers) {
    args += fmt::format(" --decoder-last-pipeline-num-layers {}", *placement.last_stage_layers);
  }
  if (!placement.layout.empty()) args += fmt::format(" --pipeline-model-parallel-layout \"{}\"", placement.layout);
  return args;
}

// Multi-head latent attention's shapes (Megatron-core's MLA flags): the
// costs take them from the model file, and Megatron needs them named.
std::string attention_arguments(const models::ModelConfig& model) {
  const models::MlaConfig& mla = model.mla;
  if (!mla.enabled()) return "";
  std::string args = " --multi-latent-attention";
  if (mla.q_lora_rank > 0) args += fmt::format(" --q-lora-rank {}", mla.q_lora_rank);
  return args + fmt::format(" --kv-lora-rank {} --qk-head-dim {} --qk-pos-emb-head-dim {} --v-head-dim {}",
                            mla.kv_lora_rank, mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.v_head_dim);
}

// The experts and their layout: Megatron-core's MoE flags, with the
// all-to-all dispatcher and grouped GEMMs the costs assume, and which
// layers are dense (--moe-layer-freq as a Python list expression).
std::string expert_arguments(const PlanCandidate& plan, const models::ModelConfig& model) {
  const models::MoeConfig& moe = model.moe;
  if (!moe.enabled()) return "";
  std::string args = fmt::format(
      " --num-experts {} --moe-router-topk {} --moe-ffn-hidden-size {} --expert-model-parallel-size {} "
      "--expert-tensor-parallel-size {} --moe-token-dispatcher-type {} --moe-grouped-gemm",
      moe.experts, moe.top_k, moe.expert_ffn, plan.ep, plan.etp > 0 ? plan.etp : plan.tp,
      plan.routing.dispatcher == models::MoeDispatcher::kDeepEp ? "flex --moe-enable-deepep" : "alltoall");
  if (moe.router_groups > 0) {
    args += fmt::format(" --moe-router-num-groups {} --moe-router-group-topk {}", moe.router_groups,
                        moe.router_group_top_k);
  }
  if (moe.shared_experts > 0) {
    args += fmt::format(" --moe-shared-expert-intermediate-size {}", moe.shared_experts * moe.expert_ffn);
  }
  if (moe.dense_layers > 0) {
    args += fmt::format(" --moe-layer-freq \"([0]*{}+[1]*{})\"", moe.dense_layers, model.layers - moe.dense_layers);
  }
  if (plan.routing.capacity_factor > 0) {
    args += fmt::format(" --moe-expert-capacity-factor {} --moe-token-drop-policy probs", plan.routing.capacity_factor);
  }
  if (plan.mtp_layers > 0) args += fmt::format(" --mtp-num-layers {}", plan.mtp_layers);
  return args;
}

}  // namespace

// The first/last counts describe a split whose middle stages are equal (one
// chunk per rank); otherwise the layout string.
MegatronPlacement megatron_placement(const PlanCandidate& plan) {
  const std::vector<int> counts = plan.split.transformer_layer_counts();
  MegatronPlacement placement;
  if (plan.virtual_stages == 1 && counts.size() > 2) {
    const int middle = counts[1];
    bool even_middle = true;
    for (std::size_t stage = 1; stage + 1 < counts.size(); ++stage) even_middle &= counts[stage] == middle;
    if (even_middle) {
      if (counts.front() != middle) placement.first_stage_layers = counts.front();
      if (counts.back() != middle) placement.last_stage_layers = counts.back();
      return placement;
    }
  }
  bool all_equal = true;
  for (int count : counts) all_equal &= count == counts.front();
  if (!all_equal) placement.layout = step::format_layout(plan.split, plan.mtp_layers);
  return placement;
}

models::Recompute uniform_recompute(const PlanCandidate& plan) {
  if (plan.stage_recompute.empty()) return plan.recompute;
  return *std::max_element(plan.stage_recompute.begin(), plan.stage_recompute.end());
}

std::string schedule_runners(const std::string& schedule) {
  const sim::ScheduleFamily& family = sim::find_schedule_family(schedule);
  std::string runs_it = "no framework runs it";
  if (family.name == "ZBH1" || family.name == "ZBH2") runs_it = "the Zero Bubble fork of Megatron-LM runs it";
  if (sim::runs_in_pytorch_pipelining(family)) runs_it = "PyTorch's pipelining runs it";
  if (family.name == "ZBVZeroBubble") runs_it = "PyTorch's pipelining and the Zero Bubble fork run it";
  if (family.name == "DualPipeV") runs_it = "PyTorch's pipelining and DeepSeek's DualPipe run it";
  if (family.name == "VHalf" || family.name == "VMin") {
    runs_it = "the Zero Bubble fork of Megatron-LM runs it; PyTorch's _PipelineScheduleRuntime runs the order "
              "`pipeplan simulate --plan PLAN --csv-out order.csv` writes";
  }
  if (sim::is_searched(family)) {
    runs_it = "PyTorch's _PipelineScheduleRuntime runs the order `pipeplan simulate --plan PLAN --csv-out "
              "order.csv` writes";
  }
  return runs_it;
}

std::string megatron_arguments(const PlanCandidate& plan, int global_batch, int seq_len,
                               const models::ModelConfig* model) {
  std::string args = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --micro-batch-size {} --global-batch-size {} "
      "--seq-length {}",
      plan.tp, plan.pp, plan.micro_batch_size, global_batch, seq_len);
  if (plan.cp > 1) args += fmt::format(" --context-parallel-size {}", plan.cp);
  if (plan.sequence_parallel) args += " --sequence-parallel";
  if (plan.pipeline_first) args += " --use-tp-pp-dp-mapping";
  if (model != nullptr) args += attention_arguments(*model) + expert_arguments(plan, *model);
  // Under pipelining ZeRO-2/3 sync once per step as the distributed
  // optimizer does: Megatron's nearest (the note says so).
  const bool nearest_zero1 = plan.zero >= models::ZeroStage::kGradients && plan.pp > 1;
  if (plan.zero == models::ZeroStage::kOptimizer || nearest_zero1) args += " --use-distributed-optimizer";
  if (plan.runtime.overlap_grad_reduce) args += " --overlap-grad-reduce";
  if (plan.runtime.overlap_param_gather) args += " --overlap-param-gather";
  if (plan.runtime.grad_reduce_in_bf16) args += " --grad-reduce-in-bf16";
  if (plan.runtime.optimizer_states_in_bf16) {
    args += " --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16";
  }
  if (plan.runtime.tp_comm_overlap) args += " --tp-comm-overlap";
  if (plan.runtime.fp8) args += " --fp8-format hybrid";
  if (plan.runtime.fp8_param_gather) args += " --fp8-param-gather";
  if (plan.runtime.moe_a2a_overlap) args += " --overlap-moe-expert-parallel-comm";
  const models::Recompute recompute = uniform_recompute(plan);
  if (recompute == models::Recompute::kSelective) {
    args += " --recompute-granularity selective";
    // Megatron's default is core_attn alone; any other set is named.
    if (plan.recompute_modules != models::kDefaultRecomputeModules) {
      args += " --recompute-modules " + models::recompute_modules_name(plan.recompute_modules, " ");
    }
  }
  if (recompute == models::Recompute::kFull) {
    args += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  }
  // A layout string names every chunk, and Megatron takes the chunks per
  // rank from it; otherwise they are given.
  const std::string placement = placement_arguments(plan);
  if (plan.virtual_stages > 1 && plan.schedule == "Interleaved1F1B" && placement.empty()) {
    args += fmt::format(" --num-virtual-stages-per-pipeline-rank {}", plan.virtual_stages);
  }
  args += placement;
  std::vector<std::string> notes;
  if (plan.zero >= models::ZeroStage::kGradients) {
    notes.push_back(fmt::format("ZeRO-{}: not in Megatron-LM, whose distributed optimizer is ZeRO-1 ({})",
                                static_cast<int>(plan.zero),
                                nearest_zero1 ? "given in its place: the same step time under pipelining, less "
                                                "memory; torchtitan runs FSDP x PP as planned"
                                              : "DeepSpeed or FSDP runs it"));
  }
  if (!plan.stage_recompute.empty()) {
    notes.push_back(fmt::format(
        "recompute per stage ({}): Megatron-LM sets one recomputation for every stage, so these arguments recompute "
        "{} everywhere (slower than planned); PyTorch's pipelining runs the plan with each stage's blocks wrapped as "
        "listed",
        models::stage_recompute_name(plan.stage_recompute), models::recompute_name(recompute)));
  }
  if (plan.recompute_in_bubbles) {
    notes.push_back("recomputation in the bubbles (each backward's recomputed forward run apart, before it): "
                    "Megatron-LM recomputes inside the backward, so these arguments run slower than planned");
  }
  // One pipeline rank runs no pipeline schedule.
  if (plan.pp > 1 && plan.schedule != "1F1B" && plan.schedule != "Interleaved1F1B") {
    notes.push_back(fmt::format("schedule {}: not in Megatron-LM's built-in schedules ({})", plan.schedule,
                                schedule_runners(plan.schedule)));
  }
  if (!notes.empty()) args += fmt::format("  # {}", fmt::join(notes, "; "));
  return args;
}

}  // namespace pipeplan::planner
