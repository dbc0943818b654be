// How a model is trained: micro-batch, sequence, parallelism and memory
// savers. Everything a per-layer cost depends on besides the model itself.
#pragma once

#include <algorithm>
#include <string_view>

#include "models/job_layout.h"

namespace pipeplan::models {

// The per-rank part of a job's layout (RankLayout) with what else a
// layer's costs depend on: the sequence, attention's kernel, and where the
// pipeline puts the ranks.
struct TrainingShape : RankLayout {
  int seq_len = 2048;  // s
  bool flash_attention = true;  // attention scores are never stored
  // More than one pipeline rank. ZeRO-2/3 then run as PyTorch's pipelining
  // runs FSDP (torchtitan): each stage's weights unsharded at its first
  // forward and held through the step, gradients accumulated whole and
  // reduce-scattered after its last backward, once per step; without
  // pipelining, per micro-batch (DeepSpeed's and FSDP's default).
  bool pipelined = false;
  int activation_bytes_per_element = 2;  // bf16 activations

  double gradient_bytes() const { return runtime.grad_reduce_in_bf16 ? 2.0 : 4.0; }
  // Ranks holding the same experts: t x c x d / (ep x etp), each expert
  // layer's gradients reduced and its optimizer sharded over them.
  int expert_replicas() const { return std::max(1, tp * cp * dp / (ep * expert_tp())); }
  // The routing's systematic skew: the busiest expert-parallel rank's
  // expected tokens over the average across ep > 1 ranks (with ep 1 every
  // rank runs every expert on its own tokens). models::busiest_rank_load
  // adds the sampling spread of one micro-batch and the capacity cap.
  double expert_skew() const { return ep > 1 ? routing.load_imbalance : 1.0; }
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
  // Sets each runtime flag that applies to this shape (the overlaps need
  // d > 1, the weight gather the distributed optimizer, the TP overlap
  // sequence parallelism) and leaves the rest off.
  void apply(const RuntimeFlags& flags);
};

// The shape `layout`'s ranks train with on sequences of `seq_len` tokens:
// its rank layout, with the runtime flags that apply to it (apply).
TrainingShape shape_of(const JobLayout& layout, int seq_len);

}  // namespace pipeplan::models
