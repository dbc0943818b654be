#include "step/framework_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "step/partitioner.h"

namespace pipeplan::step {
namespace {

using models::Recompute;
using models::ZeroStage;

constexpr std::array<FrameworkInfo, kFrameworkCount> kFrameworks = {{
    {Framework::kMegatronLm, "megatron-lm", "Megatron-LM", "core_r0.14.0"},
    {Framework::kMegatronBridge, "megatron-bridge", "Megatron-Bridge", "v0.6.0"},
    {Framework::kTorchtitan, "torchtitan", "torchtitan", "v0.2.2"},
    {Framework::kDeepSpeed, "deepspeed", "DeepSpeed", "v0.16"},
    {Framework::kPyTorch, "pytorch", "PyTorch pipelining", "2.9"},
}};
constexpr FrameworkInfo kAnyInfo{Framework::kAny, "any", "any framework", ""};

int chunks_per_rank(const models::JobLayout& layout, const sim::ScheduleFamily& family) {
  return layout.virtual_stages > 0 ? layout.virtual_stages : family.default_virtual_stages;
}

// The heaviest recomputation some stage runs (what a framework with one
// setting for every stage would have to run).
Recompute heaviest_recompute(const models::JobLayout& layout) {
  if (layout.stage_recompute.empty()) return layout.recompute;
  return *std::max_element(layout.stage_recompute.begin(), layout.stage_recompute.end());
}

// PyTorch's looped schedules (ScheduleInterleaved1F1B,
// ScheduleInterleavedZeroBubble in torch/distributed/pipelining/schedules.py)
// run the m micro-batches in max(1, m / p) rounds of equal size.
bool pytorch_rounds_divide(const models::JobLayout& layout, std::string_view family) {
  if (family != "Interleaved1F1B" && family != "InterleavedZeroBubble") return true;
  const int rounds = std::max(1, layout.microbatches / layout.pp);
  return layout.microbatches % rounds == 0;
}

// Megatron-core (megatron/core/pipeline_parallel/schedules.py,
// get_forward_backward_func): no pipelining on one rank, 1F1B
// (forward_backward_pipelining_without_interleaving) with one chunk per
// rank, interleaved 1F1B with more, whose micro-batch groups of p
// (microbatch_group_size_per_vp_stage) must divide m. One recomputation
// for every stage (--recompute-granularity), run inside the backward; the
// distributed optimizer (megatron/core/optimizer/distrib_optimizer.py) is
// ZeRO-1, with fp32 master weights (--main-params-dtype takes fp32 or
// fp16). Megatron-Bridge configures the same core.
const char* megatron_core_refusal(const models::JobLayout& layout, const sim::ScheduleFamily& schedule) {
  const int v = chunks_per_rank(layout, schedule);
  if (layout.pp > 1) {
    const std::string_view family = schedule.name;
    const bool interleaved = family == "Interleaved1F1B" && v >= 2;
    if (!(family == "1F1B" && v == 1) && !interleaved) return "a schedule other than 1F1B and interleaved 1F1B";
    if (interleaved && layout.microbatches % layout.pp != 0) return "interleaved 1F1B with m not a multiple of p";
  } else if (v > 1) {
    return "several chunks on one rank";
  }
  if (layout.zero >= ZeroStage::kGradients) return "ZeRO-2/3 (its distributed optimizer is ZeRO-1)";
  if (!layout.stage_recompute.empty()) return "recomputation chosen per stage";
  if (layout.recompute_in_bubbles) return "recomputation in the bubbles";
  if (layout.runtime.master_weights_in_bf16) return "master weights in bf16";
  return nullptr;
}

// The FSDP shardings torchtitan runs (torchtitan/models/llama3/infra/
// parallelize.py: apply_ddp only with no other parallelism, else
// fully_shard over d x c; under pipelining reshard_after_forward "default"
// keeps each stage's weights from its first forward to the step: ZeRO-2).
std::vector<ZeroStage> torchtitan_shardings(const models::JobLayout& layout) {
  const bool ddp_only = layout.tp == 1 && layout.cp == 1 && layout.pp == 1 && layout.ep == 1;
  if (ddp_only) return {ZeroStage::kNone, ZeroStage::kGradients, ZeroStage::kWeights};
  if (layout.pp > 1) return {ZeroStage::kGradients};
  return {ZeroStage::kGradients, ZeroStage::kWeights};
}

bool holds(const std::vector<ZeroStage>& stages, ZeroStage zero) {
  return std::find(stages.begin(), stages.end(), zero) != stages.end();
}

// torchtitan v0.2.2 (torchtitan/config/job_config.py and the parallelize
// functions): PyTorch's schedules and CSV orders, FSDP, a tensor-parallel
// plan that always splits the norms along the sequence, activation
// checkpointing whole blocks (its selective modes keep other tensors than
// Megatron's modules), a device mesh in the order pp, dp, cp, tp, context
// parallelism by all-gather or all-to-all (not a ring), sequences divisible
// by t x 2c, dropless experts, async TP under torch.compile (which
// a split backward refuses), gradients reduced and Adam's moments kept in
// float32, the all-to-all overlapped under DualPipeV only.
const char* torchtitan_refusal(const models::JobLayout& layout, const sim::ScheduleFamily& family, int seq_len) {
  const int v = chunks_per_rank(layout, family);
  if (layout.pp > 1) {
    if (!sim::runs_in_pytorch_pipelining(family)) return "a schedule PyTorch's pipelining lacks";
    if (!pytorch_rounds_divide(layout, family.name)) return "a looped schedule whose m is not in equal rounds";
  } else if (v > 1) {
    return "several chunks on one rank";
  }
  if (layout.dp * layout.cp > 1 && !holds(torchtitan_shardings(layout), layout.zero)) {
    return "a sharding other than FSDP's (ZeRO-2; ZeRO-3 without pipelining; none for DDP alone)";
  }
  if (!layout.stage_recompute.empty()) return "recomputation chosen per stage";
  if (layout.recompute_in_bubbles) return "recomputation in the bubbles";
  if (heaviest_recompute(layout) == Recompute::kSelective) return "selective recomputation of Megatron's modules";
  if (layout.tp > 1 && !layout.sequence_parallel) return "tensor parallelism without sequence parallelism";
  if (layout.pipeline_first) return "the rank order tp-pp-dp";
  // context_parallel_rotate_method: all-gather or all-to-all, not the
  // point-to-point ring the plan costs.
  if (layout.cp > 1) return "context parallelism by a point-to-point ring";
  if (seq_len % (layout.tp * 2) != 0) return "a sequence not divisible by 2t";
  if (layout.routing.dispatcher == models::MoeDispatcher::kDeepEp && (layout.ep == 1 || layout.expert_tp() > 1)) {
    return "DeepEP with ep 1 or expert tensor parallelism";
  }
  if (layout.routing.capacity_factor > 0) return "an expert capacity (its experts drop no tokens)";
  if (layout.runtime.moe_a2a_overlap && family.name != "DualPipeV") return "the all-to-all overlap outside DualPipeV";
  if (layout.runtime.grad_reduce_in_bf16) return "gradients reduced in bf16";
  if (layout.runtime.optimizer_states_in_bf16) return "Adam's moments in bf16";
  if (layout.runtime.master_weights_in_bf16) return "master weights in bf16";
  // Float8 all-gather under FSDP keeps the high-precision shards as the weights.
  if (layout.runtime.fp8_param_gather) return "FP8 weights without a bf16 copy";
  // Its DeepSeek-V3 (torchtitan/models/deepseek_v3) has no MTP module.
  if (layout.mtp_layers > 0) return "multi-token prediction";
  if (layout.runtime.tp_comm_overlap && layout.pp > 1 && family.splits_backward) {
    return "async tensor parallelism with a split backward";
  }
  return nullptr;
}

// DeepSpeed v0.16 (deepspeed/runtime/pipe/schedule.py: TrainSchedule, one
// chunk per rank in 1F1B order; deepspeed/runtime/pipe/engine.py asserts
// ZeRO below 2 with pipelining; PipeDataParallelTopology orders ranks
// model, data, pipe as Megatron's default) with Megatron-DeepSpeed's tensor
// parallelism and recomputation (core attention only, one setting for every
// stage). Its sequence parallelism is Ulysses' all-to-all, not the
// context-parallel ring; its experts (deepspeed/moe) are not pipelined.
const char* deepspeed_refusal(const models::JobLayout& layout, const sim::ScheduleFamily& family) {
  const int v = chunks_per_rank(layout, family);
  if (layout.pp > 1) {
    if (family.name != "1F1B" || v != 1) return "a schedule other than 1F1B";
    if (layout.zero >= ZeroStage::kGradients) return "ZeRO-2/3 with pipeline parallelism";
    if (layout.ep > 1) return "expert parallelism with pipeline parallelism";
  } else if (v > 1) {
    return "several chunks on one rank";
  }
  if (layout.cp > 1) return "context parallelism by ring attention";
  if (!layout.stage_recompute.empty()) return "recomputation chosen per stage";
  if (layout.recompute_in_bubbles) return "recomputation in the bubbles";
  if (layout.recomputes_selective() && layout.recompute_modules != models::kDefaultRecomputeModules) {
    return "selective recomputation beyond core attention";
  }
  if (layout.pipeline_first) return "the rank order tp-pp-dp";
  if (layout.routing.dispatcher == models::MoeDispatcher::kDeepEp) return "DeepEP dispatch";
  if (layout.runtime.tp_comm_overlap) return "tensor-parallel communication overlap";
  if (layout.runtime.moe_a2a_overlap) return "the all-to-all overlap";
  if (layout.runtime.optimizer_states_in_bf16) return "Adam's moments in bf16";
  if (layout.runtime.master_weights_in_bf16) return "master weights in bf16";
  if (layout.runtime.fp8_param_gather) return "FP8 weights without a bf16 copy";
  if (layout.mtp_layers > 0) return "multi-token prediction";
  return nullptr;
}

// torch.distributed.pipelining (PyTorch 2.9, schedules.py): its Schedule*
// classes and any order from a CSV (_PipelineScheduleRuntime), whose
// actions hold no recomputation of their own; the rest (DDP,
// ZeroRedundancyOptimizer, FSDP2, DTensor parallelism, checkpointing any
// module) composes around it.
const char* pytorch_refusal(const models::JobLayout& layout, const sim::ScheduleFamily& family) {
  if (layout.pp > 1) {
    if (!sim::runs_in_pytorch_pipelining(family)) return "a schedule PyTorch's pipelining lacks";
    if (!pytorch_rounds_divide(layout, family.name)) return "a looped schedule whose m is not in equal rounds";
  }
  if (layout.recompute_in_bubbles) return "recomputation in the bubbles";
  return nullptr;
}

}  // namespace

const std::array<FrameworkInfo, kFrameworkCount>& frameworks() { return kFrameworks; }

const FrameworkInfo& framework_info(Framework framework) {
  if (framework == Framework::kAny) return kAnyInfo;
  return kFrameworks[static_cast<std::size_t>(framework)];
}

std::vector<const FrameworkInfo*> frameworks_in(FrameworkSet set) {
  std::vector<const FrameworkInfo*> in;
  for (const FrameworkInfo& info : kFrameworks) {
    if ((set & framework_bit(info.id)) != 0) in.push_back(&info);
  }
  return in;
}

std::string framework_keys() {
  std::string keys;
  for (const FrameworkInfo& info : kFrameworks) keys += std::string(info.key) + ", ";
  keys.resize(keys.size() - 2);
  return keys + " or any";
}

Framework parse_framework(std::string_view text, std::string_view option) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "any") return Framework::kAny;
  for (const FrameworkInfo& info : kFrameworks) {
    if (lower == info.key) return info.id;
  }
  throw InputError(fmt::format("{} '{}': use {}", option, text, framework_keys()));
}

namespace {

const char* refusal(Framework framework, const models::JobLayout& layout, const sim::ScheduleFamily& family,
                    int seq_len) {
  switch (framework) {
    case Framework::kMegatronLm:
    case Framework::kMegatronBridge: return megatron_core_refusal(layout, family);
    case Framework::kTorchtitan: return torchtitan_refusal(layout, family, seq_len);
    case Framework::kDeepSpeed: return deepspeed_refusal(layout, family);
    case Framework::kPyTorch: return pytorch_refusal(layout, family);
    case Framework::kAny: break;
  }
  return nullptr;
}

}  // namespace

const char* framework_refusal(Framework framework, const models::JobLayout& layout, int seq_len) {
  return refusal(framework, layout, sim::find_schedule_family(layout.schedule), seq_len);
}

FrameworkSet frameworks_running(const models::JobLayout& layout, int seq_len) {
  return frameworks_running(layout, sim::find_schedule_family(layout.schedule), seq_len);
}

FrameworkSet frameworks_running(const models::JobLayout& layout, const sim::ScheduleFamily& family, int seq_len) {
  FrameworkSet set = 0;
  for (const FrameworkInfo& info : kFrameworks) {
    if (refusal(info.id, layout, family, seq_len) == nullptr) set |= framework_bit(info.id);
  }
  return set;
}

// deepspeed/runtime/pipe/module.py (_partition_layers, 'type:' method) weighs
// each layer 1 where its class matches the regex, 0 elsewhere, and
// deepspeed/runtime/utils.py partition_balanced splits those weights by a
// dynamic program keeping the heaviest and lightest parts closest; over
// L ones padded by zeros it gives the first L mod p stages ceil(L / p)
// blocks (tests/step/framework_split_test.cc runs that program).
std::optional<StageSplit> framework_split(Framework framework, int transformer_layers, int stages) {
  if (framework != Framework::kDeepSpeed || stages <= 1) return std::nullopt;
  return uniform_split(transformer_layers, stages);
}

const char* split_refusal(Framework framework, const StageSplit& split) {
  constexpr const char* kOtherSplit = "a split other than PipelineModule's own (partition_method='type:transformer')";
  const int blocks = split.layer_count() - 2;
  if (framework == Framework::kDeepSpeed && split.stages() > blocks) return kOtherSplit;
  const std::optional<StageSplit> own = framework_split(framework, blocks, split.stages());
  if (!own || *own == split) return nullptr;
  return kOtherSplit;
}

std::vector<ZeroStage> zero_stages_run(Framework framework, const models::JobLayout& layout) {
  switch (framework) {
    case Framework::kMegatronLm:
    case Framework::kMegatronBridge: return {ZeroStage::kNone, ZeroStage::kOptimizer};
    case Framework::kTorchtitan: return torchtitan_shardings(layout);
    case Framework::kDeepSpeed:
      if (layout.pp > 1) return {ZeroStage::kNone, ZeroStage::kOptimizer};
      break;
    case Framework::kPyTorch:
    case Framework::kAny: break;
  }
  return {ZeroStage::kNone, ZeroStage::kOptimizer, ZeroStage::kGradients, ZeroStage::kWeights};
}

}  // namespace pipeplan::step
