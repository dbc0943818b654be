#include "planner/frameworks/torchtitan_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "planner/frameworks/megatron_args.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {
namespace {

// torch.distributed.pipelining's get_schedule_class names, which
// pipeplan's own names spell the same way.
constexpr std::array<std::string_view, 7> kPyTorchSchedules = {
    "GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"};

bool is_pytorch_class(std::string_view name) {
  return std::find(kPyTorchSchedules.begin(), kPyTorchSchedules.end(), name) != kPyTorchSchedules.end();
}

// Two chunks per rank in a V; torchtitan places chunks so only under the
// names ZBVZeroBubble and DualPipeV (pipeline_module_split).
bool places_in_v(std::string_view name) {
  return name == "ZBVZeroBubble" || name == "DualPipeV" || name == "VHalf" || name == "VMin";
}

// Each stage's modules by torchtitan's names, stages in model order (both
// placements number them so).
std::string module_lists(const step::StageSplit& split) {
  const int output_layer = split.layer_count() - 1;
  std::string text = "module_fqns_per_model_part = [\n";
  for (int stage = 0; stage < split.stages(); ++stage) {
    std::vector<std::string> names;
    for (int layer = split.first_layer(stage); layer < split.end_layer(stage); ++layer) {
      if (layer == 0) {
        names.emplace_back("\"tok_embeddings\"");
      } else if (layer == output_layer) {
        names.emplace_back("\"norm\"");
        names.emplace_back("\"output\"");
      } else {
        names.push_back(fmt::format("\"layers.{}\"", layer - 1));
      }
    }
    text += fmt::format("  [{}],\n", fmt::join(names, ", "));
  }
  return text + "]\n";
}

std::string pipeline_lines(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  std::string text = fmt::format("pipeline_parallel_degree = {}\n", plan.pp);
  if (plan.pp == 1) {
    if (plan.virtual_stages > 1) {
      refusals.note(
          fmt::format("{} chunks on the one pipeline rank: torchtitan pipelines nothing with "
                      "pipeline_parallel_degree 1, so they run as one (fewer passes)",
                      plan.virtual_stages));
    }
    return text;
  }
  const sim::ScheduleFamily& family = sim::find_schedule_family(plan.schedule);
  const std::string_view name = family.name;
  if (!sim::runs_in_pytorch_pipelining(family)) {
    refusals.refuse(
        fmt::format("schedule {}: not among torch.distributed.pipelining's schedules ({}), which "
                    "torchtitan runs ({}); plan with one of them (--schedule)",
                    name, fmt::join(kPyTorchSchedules, ", "), schedule_runners(plan.schedule)));
    return text;
  }
  // PyTorch's looped schedules take the micro-batches in max(1, m / p)
  // rounds of equal size.
  if (name == "Interleaved1F1B" || name == "InterleavedZeroBubble") {
    const int rounds = std::max(1, plan.microbatches / plan.pp);
    if (plan.microbatches % rounds != 0) {
      refusals.refuse(fmt::format(
          "{} with {} micro-batches on {} pipeline ranks: PyTorch's runs them in max(1, m / p) = {} rounds of equal "
          "size, which {} does not divide into; plan with a micro-batch count those rounds divide (--global-batch, "
          "--micro-batch-size)",
          name, plan.microbatches, plan.pp, rounds, plan.microbatches));
    }
  }
  if (is_pytorch_class(name)) {
    text += fmt::format("pipeline_parallel_schedule = \"{}\"\n", name);
  } else {
    // An order PyTorch has no class for runs from its CSV; the name only
    // says how many chunks each rank holds and where.
    const std::string_view placing = places_in_v(name)         ? "ZBVZeroBubble"
                                     : plan.virtual_stages > 1 ? "PipelineScheduleMulti"
                                                               : "PipelineScheduleSingle";
    text += fmt::format(
        "# {}: the order `pipeplan simulate --plan PLAN --csv-out order.csv` writes, run by _PipelineScheduleRuntime;\n"
        "# the schedule's name only places the chunks\n"
        "pipeline_parallel_schedule = \"{}\"\npipeline_parallel_schedule_csv = \"order.csv\"\n",
        name, placing);
  }
  text += fmt::format("pipeline_parallel_microbatch_size = {}\n", plan.micro_batch_size);
  return text + module_lists(plan.split);
}

// torchtitan runs DDP only with no other parallelism (apply_ddp); any
// other data- or context-parallel layout shards with FSDP over d x c.
std::string data_parallel_lines(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  const bool ddp = plan.dp > 1 && plan.zero == models::ZeroStage::kNone && plan.tp == 1 && plan.cp == 1 &&
                   plan.pp == 1 && plan.ep == 1;
  const int shard = ddp ? 1 : plan.dp;
  std::string text =
      fmt::format("data_parallel_replicate_degree = {}\ndata_parallel_shard_degree = {}\n", ddp ? plan.dp : 1, shard);
  if (shard * plan.cp == 1) return text;
  // Under pipelining "default" keeps each stage's weights unsharded from
  // its first forward to the step, as the plan's ZeRO-2/3 do there; without
  // it ZeRO-2 keeps them after the forward and ZeRO-3 reshards.
  const std::string_view policy = plan.pp > 1                                ? "default"
                                  : plan.zero == models::ZeroStage::kWeights ? "always"
                                                                             : "never";
  text += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", policy);
  if (plan.zero < models::ZeroStage::kGradients) {
    refusals.note(fmt::format(
        "{}: torchtitan shards the d x c = {} ranks with FSDP only (DDP only with no other parallelism), so FSDP "
        "runs in its place as ZeRO-2 (`pipeplan plan ... --zero 2` gives its time and memory)",
        plan.zero == models::ZeroStage::kNone ? "no sharding" : "ZeRO-1 (optimizer states only)", plan.dp * plan.cp));
  }
  return text;
}

// Tensor and context parallelism; sets `compile` where async TP needs it.
std::string tensor_context_lines(const PlanCandidate& plan, int seq_len, FrameworkRefusals& refusals, bool& compile) {
  std::string text = fmt::format("tensor_parallel_degree = {}\n", plan.tp);
  if (plan.tp > 1 && !plan.sequence_parallel) {
    refusals.note(
        "tensor parallelism without sequence parallelism: torchtitan's tensor-parallel plan always splits "
        "the norms along the sequence (SequenceParallel), so it runs with it (less memory than planned)");
  }
  if (plan.runtime.tp_comm_overlap) {
    // torch.compile, which async TP needs, refuses PyTorch's split backward.
    if (sim::find_schedule_family(plan.schedule).splits_backward && plan.pp > 1) {
      refusals.note(
          fmt::format("tensor-parallel communication overlap: torchtitan's async TP needs torch.compile, "
                      "which {}'s split backward refuses, so it is left off (slower than planned)",
                      plan.schedule));
    } else {
      text += "enable_async_tensor_parallel = true\n";
      compile = true;
    }
  }
  text += fmt::format("context_parallel_degree = {}\n", plan.cp);
  if (plan.cp > 1) {
    refusals.note(
        "context parallelism: torchtitan passes keys and values by all-gather or all-to-all "
        "(context_parallel_rotate_method), not round the p2p ring the plan costs");
  }
  const int divisor = plan.tp * 2 * plan.cp;
  if (seq_len % divisor != 0) {
    refusals.refuse(
        fmt::format("sequence length {}: torchtitan needs it divisible by t x 2c = {} (seq_len_divisor); "
                    "plan with a --seq it divides",
                    seq_len, divisor));
  }
  return text;
}

std::string expert_lines(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  const int etp = plan.etp > 0 ? plan.etp : plan.tp;
  std::string text = fmt::format("expert_parallel_degree = {}\n", plan.ep);
  // With ep 1 torchtitan splits the experts over t, whatever etp says.
  if (plan.ep > 1) {
    text += fmt::format("expert_tensor_parallel_degree = {}\n", etp);
  } else if (etp != plan.tp) {
    refusals.note(
        fmt::format("experts whole on each rank (etp {} with ep 1): torchtitan splits them over the t = {} "
                    "ranks when expert_parallel_degree is 1 (less memory, more communication)",
                    etp, plan.tp));
  }
  if (plan.routing.dispatcher == models::MoeDispatcher::kDeepEp) {
    if (plan.ep == 1 || etp > 1) {
      refusals.refuse(
          fmt::format("DeepEP dispatch with ep {} and etp {}: torchtitan's DeepEP backend needs "
                      "expert_parallel_degree > 1 and expert_tensor_parallel_degree 1; plan with --etp 1 "
                      "or --moe-dispatcher alltoall",
                      plan.ep, etp));
    } else {
      text += "expert_parallel_comm_backend = \"deepep\"\n";
    }
  }
  if (plan.pp > 1 && plan.ep > 1 && sim::find_schedule_family(plan.schedule).name == "DualPipeV") {
    text += "pipeline_parallel_expert_parallel_overlap = true\n";
  } else if (plan.runtime.moe_a2a_overlap) {
    refusals.note(
        "all-to-all beside another micro-batch's passes (--moe-a2a-overlap): torchtitan overlaps it under "
        "DualPipeV only (pipeline_parallel_expert_parallel_overlap), so it runs exposed");
  }
  if (plan.routing.capacity_factor > 0) {
    refusals.note(
        fmt::format("expert capacity factor {}: torchtitan's experts drop no tokens (it has no capacity), "
                    "so they take every routed token",
                    plan.routing.capacity_factor));
  }
  return text;
}

std::string recompute_section(const PlanCandidate& plan, FrameworkRefusals& refusals) {
  const models::Recompute recompute = uniform_recompute(plan);
  if (!plan.stage_recompute.empty()) {
    refusals.note(
        fmt::format("recompute per stage ({}): torchtitan sets one activation_checkpoint mode for every "
                    "stage, so this recomputes as the heaviest stage does (slower than planned)",
                    models::stage_recompute_name(plan.stage_recompute)));
  }
  if (plan.recompute_in_bubbles) {
    refusals.note("recomputation in the bubbles: torchtitan recomputes inside the backward (slower than planned)");
  }
  if (recompute == models::Recompute::kSelective) {
    refusals.note(fmt::format(
        "selective recomputation ({}): torchtitan's selective modes recompute every nth block whole or by an op "
        "policy that keeps attention's outputs, neither the planned one, so mode = \"full\" runs in its place (less "
        "memory, slower: `pipeplan plan ... --recompute full` gives its figures)",
        models::recompute_modules_name(plan.recompute_modules)));
  }
  return fmt::format("[activation_checkpoint]\nmode = \"{}\"\n",
                     recompute == models::Recompute::kNone ? "none" : "full");
}

// FP8 for the blocks' linear layers, the output layer kept in BF16 as the
// plan keeps it; grouped experts have a converter of their own.
std::string precision_sections(bool experts) {
  std::string text = fmt::format("[model]\nconverters = [\"quantize.linear.float8\"{}]\n",
                                 experts ? ", \"quantize.grouped_mm.float8\"" : "");
  text += "\n[quantize.linear.float8]\nfilter_fqns = [\"output\"]\n";
  if (experts) text += "\n[quantize.grouped_mm.float8]\nfqns = [\"experts\"]\n";
  return text;
}

}  // namespace

FrameworkConfig torchtitan_config(const PlanCandidate& plan, int global_batch, int seq_len,
                                  const models::ModelConfig* model) {
  FrameworkRefusals refusals;
  const bool experts = plan.etp > 0 || (model != nullptr && model->moe.enabled());
  bool compile = false;
  std::string body = "[parallelism]\n" + data_parallel_lines(plan, refusals) +
                     tensor_context_lines(plan, seq_len, refusals, compile) + pipeline_lines(plan, refusals);
  if (experts) body += expert_lines(plan, refusals);
  // With pipelining each data-parallel rank's batch is its micro-batches;
  // without, torchtitan accumulates gradients over local batches.
  body += fmt::format("\n[training]\nlocal_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\n",
                      plan.pp > 1 ? plan.micro_batch_size * plan.microbatches : plan.micro_batch_size, global_batch,
                      seq_len);
  body += '\n';
  body += recompute_section(plan, refusals);
  if (compile) body += "\n[compile]\nenable = true\n";
  if (plan.runtime.fp8) body += '\n' + precision_sections(experts);
  if (plan.pipeline_first) {
    refusals.note(
        "ranks in Megatron's tp-pp-dp order: torchtitan's device mesh is pp, dp, cp, tp (Megatron's default "
        "tp-cp-dp-pp; `pipeplan plan ... --rank-order tp-cp-ep-dp-pp` gives its figures)");
  }
  if (plan.runtime.grad_reduce_in_bf16) {
    refusals.note(
        "gradients reduced in bf16: torchtitan reduces in float32 only (training.mixed_precision_reduce), "
        "more communication than planned");
  }
  if (plan.runtime.optimizer_states_in_bf16) {
    refusals.note("Adam's moments in bf16: torchtitan's optimizers keep them in float32, 4 bytes a parameter more "
                  "than planned");
  }
  return refusals.finish(
      "# torchtitan job config for the plan (TOML names of torchtitan v0.2.2, torchtitan/config/job_config.py);\n"
      "# merge into the run's own, whose [job], [model] name and flavor, [optimizer] and the rest stay\n",
      body, "#");
}

}  // namespace pipeplan::planner
