// A model expanded into the layer sequence a pipeline partitions, with the
// costs of each layer for one micro-batch on one tensor-parallel rank.
// Sources: Korthikanti et al. 2022 (activation memory), Narayanan et al.
// 2021 (parameters, FLOPs), Qi et al. 2024 Table 1 (F/B/W split, M_B/M_W).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"

namespace pipeplan::models {

// Megatron's layout letters: E embedding, t transformer block, L final
// norm + output layer + loss.
enum class LayerKind { kEmbedding, kTransformer, kLoss };

// `count` GEMM kernels on one tensor-parallel rank, each `batch` independent
// products C[m x n] = A[m x k] B[k x n] (a batched GEMM; 1 for a plain one).
// The time model costs each kernel by its shape: tiles and waves on the
// GPU's SMs, a fixed cost per kernel.
struct GemmWork {
  double m = 0;
  double n = 0;
  double k = 0;
  double count = 1;
  double batch = 1;
  bool fp8 = false;  // FP8 operands (Transformer Engine's recipe), BF16 output
  bool routed = false;  // the routed experts' grouped GEMM (what --explain names apart)
  double flops() const { return 2 * m * n * k * batch; }  // of one kernel
  // The backward GEMMs of a linear layer Y = X W with X [m x k]: the input
  // gradient dX = dY W^T (m x k, summing over n) and the weight gradient
  // dW = X^T dY (k x n, summing over m). Same FLOPs, other shapes.
  GemmWork input_gradient() const { return {m, k, n, count, batch, fp8, routed}; }
  GemmWork weight_gradient() const { return {k, n, m, count, batch, fp8, routed}; }
  friend bool operator==(const GemmWork&, const GemmWork&) = default;
};

// One attention core (Q K^T, softmax, scores x V) over `heads` independent
// (sequence, head) problems of `seq` queries and keys: a forward, or its
// gradient (twice the forward's FLOPs, Qi et al. 2024 Table 1). FLOPs count
// the full s x s square (Narayanan et al. 2021 Eq. 3), as MFU does; the time
// model costs what the kernels execute (causal skipping, recomputation).
//
// With context parallelism over `ring` ranks each rank holds `seq` = s / c
// queries (two chunks, for causal load balance) and sees every key: the
// keys and values circulate around the ring (Megatron / Transformer
// Engine's p2p context parallelism), one block of `exchange_bytes` per step,
// sent while the step before it computes.
struct AttentionWork {
  double heads = 0;   // micro-batch x attention heads on this rank
  double seq = 0;     // queries on this rank (and keys per ring step)
  double qk_dim = 0;  // per head
  double v_dim = 0;
  bool gradient = false;
  int ring = 1;               // context-parallel ranks the keys go round
  double exchange_bytes = 0;  // sent per ring step: K and V (and dK, dV in the gradient)
  double flops() const { return (gradient ? 2.0 : 1.0) * 2 * heads * seq * seq * ring * (qk_dim + v_dim); }
  friend bool operator==(const AttentionWork&, const AttentionWork&) = default;
};

// One kind of tensor-parallel collective: `count` calls of `bytes` each
// (nccl-tests' size: the whole buffer, each rank's full input for an
// all-reduce, the gathered output of an all-gather, the input of a
// reduce-scatter, each rank's send buffer of an all-to-all).
enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll };
struct CollectiveWork {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  double bytes = 0;
  double count = 1;
  // A mixture of experts' token exchange (an all-to-all): `bytes` holds each
  // token `copies` (top_k) times, for `experts` experts spread evenly over
  // the group's ranks; with group-limited routing, from `group_top_k` of
  // `groups` groups of them.
  double copies = 1;
  int experts = 0;
  int groups = 0;
  int group_top_k = 0;
  friend bool operator==(const CollectiveWork&, const CollectiveWork&) = default;
};

// Per pass: the matrix work, the attention cores, the bytes elementwise
// kernels move (norms, activations, softmax, dropout, residual adds: read +
// written), the tensor-parallel collectives and, with ZeRO-2 or 3, the
// collectives over the ranks sharding the layer's state (its d x c weight
// replicas): weights gathered before use, gradients reduce-scattered; in a
// mixture of experts the token dispatch and combine (all-to-alls over the
// expert-parallel group) and the expert tensor-parallel group's gathers
// and reduce-scatters of the dispatched tokens.
struct PassWork {
  std::vector<GemmWork> gemms;
  std::vector<AttentionWork> attention;
  double memory_bytes = 0;  // elementwise traffic
  // Of memory_bytes: a mixture of experts' routing (router softmax and
  // top-k, the routed pairs' permute and unpermute).
  double routing_bytes = 0;
  std::vector<CollectiveWork> collectives;
  std::vector<CollectiveWork> shard_collectives;
  std::vector<CollectiveWork> expert_collectives;
  double attention_flops() const {
    double total = 0;
    for (const AttentionWork& core : attention) total += core.flops();
    return total;
  }
  double flops() const {  // gemms + attention
    double total = attention_flops();
    for (const GemmWork& gemm : gemms) total += gemm.flops() * gemm.count;
    return total;
  }
  friend bool operator==(const PassWork&, const PassWork&) = default;
  // Bytes of one kind's collectives, summed over calls.
  double collective_bytes(CollectiveKind kind) const {
    double total = 0;
    for (const CollectiveWork& call : collectives) total += call.kind == kind ? call.bytes * call.count : 0;
    return total;
  }
};

struct LayerCost {
  std::string name;  // "embedding", "layer 12", "output"
  LayerKind kind = LayerKind::kTransformer;
  bool moe = false;

  std::int64_t params = 0;          // the whole layer, all tensor-parallel ranks
  std::int64_t active_params = 0;   // used per token (MoE: routed experts only)
  std::int64_t params_per_rank = 0; // held by one tensor-parallel rank
  // Of params_per_rank: the routed experts' (this rank's ep-th of the
  // experts, each split over etp), replicated over the expert data-parallel
  // group instead of the d x c weight replicas.
  std::int64_t expert_params_per_rank = 0;
  // Of params_per_rank: the weights of FP8 linear layers (with fp8).
  std::int64_t fp8_params_per_rank = 0;
  // FP8 copies of those weights Transformer Engine keeps through a step's
  // micro-batches beside the bf16 ones (one row-wise and one column-wise
  // byte per weight); none with --fp8-param-gather, where the FP8 data and
  // its transpose are the weight.
  std::int64_t fp8_weight_copy_bytes = 0;
  // Held once per process by the token dispatcher of any MoE layer, outside
  // PyTorch's allocator (DeepEP's NVLink and RDMA buffers).
  std::int64_t dispatcher_buffer_bytes = 0;

  PassWork forward;
  PassWork backward_input;   // input gradients, plus the recomputed forward if any
  PassWork backward_weight;  // weight gradients
  double recompute_flops = 0;  // of backward_input: the recomputed forward
  PassWork recompute;          // of backward_input: the recomputed forward's work
  // Of the forward's GEMM FLOPs (and as many in I and in W): what the busiest
  // expert-parallel rank runs beyond the average (models::TrainingShape::
  // busiest_rank_load), which model FLOPs leave out.
  double excess_flops = 0;

  // Zero Bubble's accounting, per micro-batch on one tensor-parallel rank.
  std::int64_t activation_bytes = 0;   // M_B: kept from F until the input-gradient pass
  std::int64_t weight_grad_bytes = 0;  // M_W: of M_B, kept after it until W
  std::int64_t logits_bytes = 0;       // of M_B: fp32 logits (output layer only)
  std::int64_t working_bytes = 0;      // transient during its backward (recompute, softmax gradient)
  // Of working_bytes: what the recomputation brings back (M_B without
  // recomputation less this M_B).
  std::int64_t recompute_bytes = 0;
  std::int64_t output_bytes = 0;       // sent to the next stage if a boundary follows
  // The output layer: the multi-token prediction blocks it runs too.
  int mtp_blocks = 0;
};

struct ModelLayers {
  std::vector<LayerCost> layers;  // embedding, blocks..., output
  std::int64_t total_params = 0;
  std::int64_t active_params = 0;
  std::int64_t embedding_params = 0;  // input embedding (+ learned positions)
  int transformer_layers() const { return static_cast<int>(layers.size()) - 2; }
};

// A model's layers with each distinct one costed once (the embedding, a
// dense block, an MoE block, the output) and which one each position holds:
// what a search tables thousands of times, without a copy per block.
struct LayerKinds {
  std::vector<LayerCost> kinds;
  std::vector<int> kind_at;        // per position (embedding, blocks..., output): into kinds
  std::vector<std::string> names;  // per position
  std::int64_t total_params = 0;
  std::int64_t active_params = 0;
  std::int64_t embedding_params = 0;
  int positions() const { return static_cast<int>(kind_at.size()); }
  int transformer_layers() const { return positions() - 2; }
  const LayerCost& at(int position) const {
    return kinds[static_cast<std::size_t>(kind_at[static_cast<std::size_t>(position)])];
  }
};

// Throws InputError for shapes that cannot run: heads not dividing hidden,
// t not dividing heads or kv heads, non-positive sizes.
LayerKinds expand_layer_kinds(const ModelConfig& model, const TrainingShape& shape);
// The same layers, one LayerCost per position, each named.
ModelLayers expand_layers(const ModelConfig& model, const TrainingShape& shape);

// FLOPs of forward and backward for one micro-batch over the whole model
// (all tensor-parallel ranks): model FLOPs leave recomputation out (what MFU
// counts), hardware FLOPs include it.
double model_flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape);
double model_flops_per_microbatch(const LayerKinds& layers, const TrainingShape& shape);
double hardware_flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape);

}  // namespace pipeplan::models
