// How a model is trained: micro-batch, sequence, parallelism and memory
// savers. Everything a per-layer cost depends on besides the model itself.
#pragma once

#include <algorithm>
#include <string_view>

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

// How the framework runs a step besides its layout (Megatron's flags): what
// it overlaps, and in which precision it reduces gradients.
struct RuntimeFlags {
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool grad_reduce_in_bf16 = false;
  bool tp_comm_overlap = false;
  bool fp8 = false;  // --precision fp8
  bool moe_a2a_overlap = false;  // --overlap-moe-expert-parallel-comm
  friend bool operator==(const RuntimeFlags&, const RuntimeFlags&) = default;
};

struct TrainingShape {
  int micro_batch_size = 1;  // b
  int seq_len = 2048;        // s
  int tp = 1;                // t: tensor-parallel size
  int cp = 1;                // c: context-parallel size (each rank holds s / c of every sequence)
  int dp = 1;                // d: data-parallel size
  // Mixture of experts (Megatron's MoE parallel folding): the experts of a
  // layer divide over `ep` ranks, each expert's matrices over `etp` ranks
  // (0: as the attention's t, Megatron's default). Per pipeline stage the
  // t x c x d ranks fold into etp x ep x (expert data-parallel) ranks.
  int ep = 1;
  int etp = 0;
  // Tokens the busiest expert-parallel rank is routed on average over the
  // mean (1: balanced in expectation, as Megatron's force-balanced routing;
  // at most experts / top_k, all the tokens); each micro-batch's sampling
  // spread comes on top. A capacity factor above 0 drops what exceeds that
  // many times an expert's average.
  double moe_load_imbalance = 1.0;
  double moe_capacity_factor = 0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // Megatron's --overlap-moe-expert-parallel-comm (combined 1F1B): each
  // steady-state forward runs with the backward after it as one overlapped
  // pair, each one's all-to-all beside the other's compute.
  bool moe_a2a_overlap = false;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  unsigned recompute_modules = kDefaultRecomputeModules;  // with kSelective: RecomputeModule bits
  bool flash_attention = true;  // attention scores are never stored
  // Transformer Engine's FP8 recipe (--precision fp8): the transformer
  // blocks' linear layers run in FP8; attention, norms, the embedding and
  // the output layer stay in BF16.
  bool fp8 = false;
  ZeroStage zero = ZeroStage::kNone;
  // More than one pipeline rank. ZeRO-2/3 then run as PyTorch's pipelining
  // runs FSDP (torchtitan): each stage's weights unsharded at its first
  // forward and held through the step, gradients accumulated whole and
  // reduce-scattered after its last backward, once per step; without
  // pipelining, per micro-batch (DeepSpeed's and FSDP's default).
  bool pipelined = false;
  // Megatron's --overlap-grad-reduce: each model chunk's gradients are
  // reduced over the data-parallel group as soon as its last backward ends,
  // behind the backward passes still to run. --overlap-param-gather (with the
  // distributed optimizer): the updated weights are gathered behind the next
  // step's forward passes. Off: both wait for the pipeline (the default).
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // Megatron's --grad-reduce-in-bf16: the gradient buffers, and so their
  // data-parallel reduction, in bf16 (2 bytes) instead of fp32 (4).
  bool grad_reduce_in_bf16 = false;
  // Megatron's --tp-comm-overlap (Transformer Engine's userbuffers, with
  // sequence parallelism): each all-gather and reduce-scatter runs in t
  // chunks beside the GEMM it feeds or follows.
  bool tp_comm_overlap = false;
  int activation_bytes_per_element = 2;  // bf16 activations

  double gradient_bytes() const { return grad_reduce_in_bf16 ? 2.0 : 4.0; }
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // Ranks holding the same experts: t x c x d / (ep x etp), each expert
  // layer's gradients reduced and its optimizer sharded over them.
  int expert_replicas() const { return std::max(1, tp * cp * dp / (ep * expert_tp())); }
  // The routing's systematic skew: the busiest expert-parallel rank's
  // expected tokens over the average across ep > 1 ranks (with ep 1 every
  // rank runs every expert on its own tokens). models::busiest_rank_load
  // adds the sampling spread of one micro-batch and the capacity cap.
  double expert_skew() const { return ep > 1 ? moe_load_imbalance : 1.0; }
  // Ranks holding the same weights of a stage: the data-parallel replicas
  // and, within each, the context-parallel ranks (Megatron reduces gradients
  // and shards the distributed optimizer over this d x c group).
  int weight_replicas() const { return dp * cp; }
  // Megatron's --use-tp-pp-dp-mapping (rank order tp-pp-dp; c = 1, no
  // experts): the p pipeline ranks (this many; 0: Megatron's default order
  // tp-cp-ep-dp-pp) vary before the replicas. Neighbouring stages are then t
  // GPUs apart and the replicas t x p apart; by default stages are t x c x d
  // apart and replicas t apart.
  int pipeline_first_ranks = 0;
  int replica_stride() const { return pipeline_first_ranks > 0 ? tp * pipeline_first_ranks : tp; }
  int stage_stride() const { return pipeline_first_ranks > 0 ? tp : tp * cp * dp; }
  // Gradients reduced and weights gathered once per step, after the
  // pipeline or behind it (the distributed optimizer; ZeRO-2/3 pipelined),
  // rather than beside each micro-batch's passes.
  bool shards_once_per_step() const {
    return zero == ZeroStage::kOptimizer || (pipelined && zero >= ZeroStage::kGradients);
  }
  // Sets each flag that applies to this shape (the overlaps need d > 1, the
  // weight gather the distributed optimizer, the TP overlap sequence
  // parallelism) and leaves the rest off; runtime() reads them back.
  void apply(const RuntimeFlags& flags);
  RuntimeFlags runtime() const {
    return {overlap_grad_reduce, overlap_param_gather, grad_reduce_in_bf16, tp_comm_overlap, fp8, moe_a2a_overlap};
  }
};

// "alltoall" | "deepep"; throws InputError naming `field`.
MoeDispatcher parse_moe_dispatcher(std::string_view text, std::string_view field = "--moe-dispatcher");
std::string_view moe_dispatcher_name(MoeDispatcher dispatcher);

}  // namespace pipeplan::models
