// How a job is laid out over its GPUs, as one value: the parallel degrees,
// the micro-batching and schedule, recomputation, sharding, the framework's
// overlaps and precision, and a mixture of experts' routing. The plan
// request fixes some of it, a candidate and a plan file hold all of it, a
// training shape is its per-rank part (models/training_shape.h), and
// models/layout_fields.h names each knob once for the command line, plan
// files, Python and studies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/recompute.h"

namespace pipeplan::models {

// ZeRO / distributed optimizer sharding over the data-parallel group:
// 0 none, 1 optimizer states (Megatron's distributed optimizer), 2 + gradients,
// 3 + weights.
enum class ZeroStage { kNone = 0, kOptimizer = 1, kGradients = 2, kWeights = 3 };

// How a mixture of experts' tokens reach their experts: Megatron's
// all-to-all dispatcher sends each of a token's top_k copies to its
// expert's rank; DeepEP (Megatron's flex dispatcher) sends a token once to
// each other node holding one of its experts and forwards it over NVLink
// within the node.
enum class MoeDispatcher { kAllToAll, kDeepEp };

// "alltoall" | "deepep"; throws InputError naming `field`.
MoeDispatcher parse_moe_dispatcher(std::string_view text, std::string_view field = "--moe-dispatcher");
std::string_view moe_dispatcher_name(MoeDispatcher dispatcher);

// How the framework runs a step besides its layout (Megatron's flags): what
// it overlaps, and in which precision it computes and reduces gradients.
struct RuntimeFlags {
  // --overlap-grad-reduce: each model chunk's gradients reduced over the
  // data-parallel group as soon as its last backward ends, behind the
  // backward passes still to run. --overlap-param-gather (with the
  // distributed optimizer): the updated weights gathered behind the next
  // step's forward passes. Off: both wait for the pipeline.
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // --grad-reduce-in-bf16: the gradient buffers, and so their reduction, in
  // bf16 (2 bytes) instead of fp32 (4).
  bool grad_reduce_in_bf16 = false;
  // --tp-comm-overlap (Transformer Engine's userbuffers, with sequence
  // parallelism): each all-gather and reduce-scatter in t chunks beside the
  // GEMM it feeds or follows.
  bool tp_comm_overlap = false;
  // Transformer Engine's FP8 recipe (--precision fp8): the transformer
  // blocks' linear layers in FP8; attention, norms, the embedding and the
  // output layer stay in BF16.
  bool fp8 = false;
  // --fp8-param-gather (with fp8 and the distributed optimizer): the FP8
  // layers keep their weights in FP8 alone, no bf16 copy ("keep the compute
  // param in fp8 ... and perform the param all-gather in fp8", Megatron-LM
  // arguments.py). Each such weight holds its FP8 data and transpose (2
  // bytes) where it held bf16 and both FP8 copies (4), and is gathered in 1
  // byte. The fp32 master weights stay in the optimizer.
  bool fp8_param_gather = false;
  // --overlap-moe-expert-parallel-comm (combined 1F1B): each steady-state
  // forward runs with the backward after it as one overlapped pair, each
  // one's all-to-all beside the other's compute.
  bool moe_a2a_overlap = false;
  // --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype
  // bf16: Adam's two moments in bf16 beside the fp32 master weights (8
  // bytes of optimizer state a parameter, not 12). Megatron runs it inside
  // its distributed optimizer only (OptimizerConfig asserts so).
  bool optimizer_states_in_bf16 = false;
  // The optimizer's master copy of the weights in bf16 instead of fp32 (2
  // bytes a parameter for 4): NeMo's distributed_fused_adam with optim.dtype
  // bf16 (Apex DistributedFusedAdam keeps its params_shard, exp_avg and
  // exp_avg_sq shards in that dtype), which with the moments in bf16 holds 6
  // bytes of optimizer state a parameter. Inside a distributed optimizer only.
  bool master_weights_in_bf16 = false;
  friend bool operator==(const RuntimeFlags&, const RuntimeFlags&) = default;
};

// How a mixture of experts' routing loads its ranks.
struct MoeRouting {
  // Tokens the busiest expert-parallel rank is routed on average over the
  // mean (1: balanced in expectation, as Megatron's force-balanced routing;
  // at most experts / top_k, all the tokens); each micro-batch's sampling
  // spread comes on top.
  double load_imbalance = 1.0;
  // Above 0: tokens beyond this many times an expert's average are dropped.
  double capacity_factor = 0;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  friend bool operator==(const MoeRouting&, const MoeRouting&) = default;
};

// What every rank runs with, whatever its stage: the part of a layout that
// a layer's costs depend on.
struct RankLayout {
  int micro_batch_size = 1;  // b
  int tp = 1;                // t: tensor-parallel size
  int cp = 1;                // c: context-parallel size (each rank holds s / c of every sequence)
  int dp = 1;                // d: data-parallel size
  // Mixture of experts (Megatron's MoE parallel folding): the experts of a
  // layer divide over `ep` ranks, each expert's matrices over `etp` ranks
  // (0: as the attention's t, Megatron's default). Per pipeline stage the
  // t x c x d ranks fold into etp x ep x (expert data-parallel) ranks.
  int ep = 1;
  int etp = 0;
  // Multi-token prediction modules trained (Megatron's --mtp-num-layers, at
  // most the model's): costed with the loss, on the last stage.
  int mtp_layers = 0;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  unsigned recompute_modules = kDefaultRecomputeModules;  // with kSelective: RecomputeModule bits
  ZeroStage zero = ZeroStage::kNone;
  RuntimeFlags runtime;
  MoeRouting routing;

  int expert_tp() const { return etp > 0 ? etp : tp; }
  friend bool operator==(const RankLayout&, const RankLayout&) = default;
};

// The pipeline: its ranks, the schedule over them and what runs between
// its passes.
struct PipelineLayout {
  int pp = 1;
  int virtual_stages = 0;  // model chunks per rank; 0: the schedule's default
  int microbatches = 1;    // per iteration, per data-parallel replica
  std::string schedule = "1F1B";
  // Recomputation per stage (p x v settings, in stage order), each stage's
  // layers costed with its own and selective with the recompute modules;
  // empty: the rank layout's on every stage.
  std::vector<Recompute> stage_recompute;
  // Recomputation as passes of their own before the backwards, in the
  // bubbles (sim::SimulationOptions::recompute_in_bubbles).
  bool recompute_in_bubbles = false;
  friend bool operator==(const PipelineLayout&, const PipelineLayout&) = default;
};

struct JobLayout : RankLayout, PipelineLayout {
  // Megatron's rank order tp-pp-dp (--use-tp-pp-dp-mapping) in place of its
  // default tp-cp-ep-dp-pp (models/placement.h).
  bool pipeline_first = false;

  long long gpus() const { return static_cast<long long>(tp) * cp * pp * dp; }
  // Whether some stage recomputes; whether some stage recomputes
  // selectively (so that the recompute modules apply).
  bool recomputes() const;
  bool recomputes_selective() const;
  friend bool operator==(const JobLayout&, const JobLayout&) = default;
};

// Refuses a layout whose counts multiply past what any job has, before
// anything multiplies them in an int: GPUs (tp x cp x pp x dp, at most
// kMaxGpus), model chunks (pp x virtual, at most kMaxCount) and sequences
// per step (micro_batch_size x microbatches x dp, at most 2^31 - 1), each
// named by its fields.
void check_layout_counts(const JobLayout& layout);

}  // namespace pipeplan::models
