// Internal to models/: the halves of a transformer block (attention, dense
// MLP, mixture of experts) and the two edge layers, each costed once per
// expand_layers call for one micro-batch on one tensor-parallel rank.
#pragma once

#include <cstdint>
#include <vector>

#include "models/layers.h"
#include "models/model_config.h"
#include "models/training_shape.h"

namespace pipeplan::models::detail {

// The training shape reduced to what the costs need.
struct RankShape {
  std::int64_t batch = 1;   // b
  std::int64_t seq = 1;     // s / c: this rank's share of each sequence
  std::int64_t tokens = 1;  // b * s / c
  int tp = 1;               // t
  int cp = 1;               // c
  int ep = 1;               // expert-parallel size
  int etp = 1;              // expert tensor-parallel size
  double expert_skew = 1;   // TrainingShape::expert_skew
  double capacity_factor = 0;  // Megatron's --moe-expert-capacity-factor; 0: dropless
  bool sequence_parallel = false;
  bool flash = true;
  bool fp8 = false;  // linear layers in FP8
  bool fp8_weights = false;  // their weights kept in FP8 alone (--fp8-param-gather)
  std::int64_t element = 2;  // bytes per activation element

  // Bytes of `per_token` bytes per token for tensors that every rank holds
  // whole without sequence parallelism and 1/t of with it (Korthikanti et al.
  // 2022 Sec. 4.2.2).
  std::int64_t whole(std::int64_t per_token) const;
  // A size split over the tensor-parallel ranks (rounded up: Megatron pads).
  std::int64_t split(std::int64_t size) const { return (size + tp - 1) / tp; }
  // This rank's share of a whole tensor's bytes or traffic per token, as whole().
  double per_rank_whole(double per_token) const { return sequence_parallel ? per_token / tp : per_token; }
};

// One half of a transformer block. Stored tensors and elementwise traffic are
// kept in two kinds: `whole` ones (per token, not yet divided: see
// RankShape::whole) and `split` ones (per token, already this rank's share).
struct BlockCost {
  std::int64_t params = 0;
  std::int64_t active_params = 0;
  std::int64_t params_per_rank = 0;
  std::int64_t expert_params_per_rank = 0;  // of params_per_rank: routed experts
  std::vector<GemmWork> gemms;  // forward GEMMs on this rank
  // Tensor-parallel collectives around this half: an all-gather before it and
  // a reduce-scatter after it with sequence parallelism, else an all-reduce
  // after it; none for routed experts, whose tokens travel by expert_collectives.
  int tp_collectives = 1;
  double excess_flops = 0;                         // forward GEMM FLOPs beyond the average expert load
  std::vector<CollectiveWork> expert_collectives;  // forward
  std::vector<AttentionWork> attention;  // forward attention core on this rank

  std::int64_t stored_whole = 0;  // kept for the backward, bytes per token
  std::int64_t stored_split = 0;
  // Attention scores (softmax, dropout) or, with flash attention, the fp32
  // softmax statistics, per micro-batch: selective recompute drops them.
  std::int64_t stored_scores = 0;
  std::int64_t wgrad_whole = 0;  // linear inputs and output gradients W needs
  std::int64_t wgrad_split = 0;

  double traffic_whole = 0;   // forward elementwise bytes per token
  double traffic_split = 0;
  double traffic_scores = 0;  // forward softmax and dropout over the scores
  double routing_traffic_whole = 0;  // of traffic_whole: router softmax and top-k, permute and unpermute

  // What Megatron's recompute modules drop (of the stored bytes above, per
  // token) and the elementwise bytes that recompute them in the backward:
  // layernorm, the pre-norm's output (whole), and moe_act, the routed
  // experts' activation output (split).
  std::int64_t norm_output_whole = 0;
  double norm_traffic_whole = 0;
  std::int64_t activation_split = 0;
  double activation_traffic_split = 0;

  // Megatron's whole-module recomputation (mlp on a dense MLP, moe on a
  // mixture of experts): the module keeps its input (the pre-norm's output)
  // and drops the rest of what it stores, per token, re-running its GEMMs
  // (all of `gemms`), its elementwise bytes and its collectives in the
  // backward. shared_experts alike for the shared experts alone, whose two
  // GEMMs end `gemms`.
  bool routed = false;  // a mixture of experts, not a dense MLP
  // mla_up_proj: latent attention's Q, K and V (made by the up-projections
  // and rope) dropped after the attention core, per token, and the two
  // up-projection GEMMs and rope's bytes that make them again.
  std::int64_t up_proj_split = 0;
  double up_proj_traffic_split = 0;
  std::vector<GemmWork> up_proj_gemms;
  std::int64_t module_whole = 0;
  std::int64_t module_split = 0;
  double module_traffic_whole = 0;
  double module_traffic_split = 0;
  std::int64_t shared_split = 0;
  double shared_traffic_split = 0;
  std::size_t shared_gemms = 0;
};

// Which side of a linear layer's weight the tensor-parallel ranks split:
// its output columns (Megatron's ColumnParallelLinear: QKV, fc1) or its
// input rows (RowParallelLinear: the output projection, fc2).
enum class Split { kColumns, kRows };

// Adds `count` linear layers of `in` x `out` applied to `tokens` tokens: the
// forward GEMM on this rank, one side of the weight divided over t.
void add_gemm(BlockCost& block, const RankShape& shape, double tokens, std::int64_t in, std::int64_t out,
              Split split, double count = 1);

std::int64_t norm_params(const ModelConfig& model, std::int64_t width);

// The tensor-parallel collectives of `calls` halves of a block (models/layers.cc).
std::vector<CollectiveWork> tensor_parallel_collectives(const ModelConfig& model, const RankShape& shape,
                                                        double calls);

// A block's stored bytes for the backward (M_B, M_W) and transient bytes
// under `recompute` with the selective `modules`, and what its backward
// runs again (models/recompute_costs.cc).
void set_memory(LayerCost& layer, const BlockCost& attention, const BlockCost& mlp, const RankShape& shape,
                Recompute recompute, unsigned modules, std::int64_t hidden);
void add_recompute(LayerCost& layer, const BlockCost& attention, const BlockCost& mlp, const ModelConfig& model,
                   const RankShape& shape, Recompute recompute, unsigned modules);

BlockCost attention_block(const ModelConfig& model, const RankShape& shape);
BlockCost dense_mlp_block(const ModelConfig& model, const RankShape& shape);
BlockCost moe_block(const ModelConfig& model, const RankShape& shape);

LayerCost embedding_layer(const ModelConfig& model, const RankShape& shape);
LayerCost output_layer(const ModelConfig& model, const RankShape& shape);

// Adds `part`'s work, parameters and memory to `into` (one layer running
// both, one after the other).
void absorb(LayerCost& into, const LayerCost& part);
// Refuses more multi-token prediction modules than the model has, or any
// with context parallelism. Throws InputError.
void check_mtp_layers(const ModelConfig& model, const TrainingShape& shape);
// Adds `modules` multi-token prediction modules, each with a copy of
// `block` (the model's last), to the output layer (models/mtp_layers.cc).
void add_mtp_modules(LayerCost& output, const ModelConfig& model, const RankShape& shape, const LayerCost& block,
                     int modules);

}  // namespace pipeplan::models::detail
