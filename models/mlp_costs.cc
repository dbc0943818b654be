// The MLP half of a transformer block: pre-norm, a dense MLP or a mixture of
// experts, and the residual add. Stored tensors follow Korthikanti et al.
// 2022 Sec. 4.1 (GeLU, FFN = 4h; squared ReLU alike); a gated MLP (SwiGLU) stores its gate and up
// outputs and the down-projection's input instead.
#include <algorithm>
#include <cmath>

#include "models/expert_parallel.h"
#include "models/layer_blocks.h"

namespace pipeplan::models::detail {
namespace {

// Widths of one expert or dense MLP of `ffn` hidden units.
struct MlpShape {
  std::int64_t up_width;       // fc1 output: ffn, or gate + up for SwiGLU
  std::int64_t matrices;       // h x ffn matrices
  std::int64_t stored_tensors; // ffn-wide tensors kept for the backward
  std::int64_t act_traffic;    // ffn-wide reads + writes of the activation
};

MlpShape mlp_shape(const ModelConfig& model, std::int64_t ffn) {
  if (model.mlp == MlpKind::kSwiglu) return {2 * ffn, 3, 3, 3};
  // GeLU and squared ReLU (Nemotron-4): the activation's input (fc1 output)
  // and output (fc2 input), 8sbh each at 4h.
  return {ffn, 2, 2, 2};
}

// Parameters of one MLP; `split` divides the matrices over the ranks. The
// fc1 bias is split with its column-parallel matrix, the fc2 bias is whole.
std::int64_t mlp_params(const ModelConfig& model, std::int64_t ffn, int split) {
  const std::int64_t h = model.hidden;
  const std::int64_t ffn_rank = (ffn + split - 1) / split;
  const MlpShape mlp = mlp_shape(model, ffn_rank);
  return mlp.matrices * h * ffn_rank + (model.biases ? mlp.up_width + h : 0);
}

// The pre-norm and the residual add with its optional dropout.
void add_norm_and_residual(BlockCost& block, const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  block.params += norm_params(model, h);
  block.active_params += norm_params(model, h);
  block.params_per_rank += norm_params(model, h);
  block.stored_whole += e * h + (model.dropout ? h : 0);
  block.traffic_whole += 2.0 * e * h + 3.0 * e * h + (model.dropout ? h : 0);
  block.norm_traffic_whole += 2.0 * e * h;
}

}  // namespace

BlockCost dense_mlp_block(const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const std::int64_t ffn_rank = shape.split(model.ffn);
  const MlpShape full = mlp_shape(model, model.ffn);
  const MlpShape rank = mlp_shape(model, ffn_rank);
  BlockCost block;
  block.params = mlp_params(model, model.ffn, 1);
  block.active_params = block.params;
  block.params_per_rank = mlp_params(model, model.ffn, shape.tp);
  add_gemm(block, shape, static_cast<double>(shape.tokens), h, full.up_width, Split::kColumns);
  add_gemm(block, shape, static_cast<double>(shape.tokens), model.ffn, h, Split::kRows);
  // fc1 input whole (the pre-norm's output); the ffn-wide tensors split.
  block.stored_whole += e * h;
  block.norm_output_whole += e * h;
  block.stored_split += e * rank.stored_tensors * ffn_rank;
  // W: fc1 input and output gradient, fc2 input and output gradient.
  block.wgrad_whole += 2 * e * h;
  block.wgrad_split += e * (rank.up_width + ffn_rank);
  block.traffic_split += static_cast<double>(e * rank.act_traffic * ffn_rank);
  // mlp keeps fc1's input (the pre-norm's output) and drops the ffn-wide tensors.
  block.module_split = block.stored_split;
  block.module_traffic_split = block.traffic_split;
  add_norm_and_residual(block, model, shape);
  return block;
}

// Top-k routing as Megatron's all-to-all token dispatcher runs it. With
// sequence parallelism (or t = 1) each rank routes its own b s / (c t)
// tokens: their top_k copies go to the ranks holding their experts (an
// all-to-all over the ep ranks, its output gathered over the etp ranks
// that split each expert), run through this rank's experts / ep experts as
// one grouped GEMM, and come back the same way. Without sequence
// parallelism (ep 1, etp t) every tensor-parallel rank runs all tokens
// through its t-th of every expert, and one all-reduce sums them. The
// busiest rank's share (busiest_rank_load) sets every routed term.
BlockCost moe_block(const ModelConfig& model, const RankShape& shape) {
  const MoeConfig& moe = model.moe;
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const bool dispatched = shape.sequence_parallel || shape.tp == 1;
  const std::int64_t ffn_expert = (moe.expert_ffn + shape.etp - 1) / shape.etp;  // one expert's, on this rank
  const std::int64_t ffn_shared = shape.split(moe.expert_ffn);
  const MlpShape full = mlp_shape(model, moe.expert_ffn);
  const MlpShape expert_rank = mlp_shape(model, ffn_expert);
  const MlpShape shared_rank = mlp_shape(model, ffn_shared);
  const std::int64_t routed = moe.top_k;
  const std::int64_t router = h * moe.experts;
  const std::int64_t local_experts = moe.experts / shape.ep;
  BlockCost block;
  const std::int64_t expert = mlp_params(model, moe.expert_ffn, 1);
  block.params = (moe.experts + moe.shared_experts) * expert + router;
  block.active_params = (routed + moe.shared_experts) * expert + router;
  block.expert_params_per_rank = local_experts * mlp_params(model, moe.expert_ffn, shape.etp);
  block.params_per_rank =
      block.expert_params_per_rank + moe.shared_experts * mlp_params(model, moe.expert_ffn, shape.tp) + router;

  const double tokens = static_cast<double>(shape.tokens);
  // Tokens this rank routes, and those its experts run on (gathered over etp).
  const double local = dispatched ? tokens / shape.tp : tokens;
  const double gathered = dispatched ? local * shape.etp : tokens;
  const double load = busiest_rank_load(moe, shape.ep, gathered * shape.ep, shape.expert_skew, shape.capacity_factor);
  const double per_expert = gathered * static_cast<double>(routed) * shape.ep / moe.experts * load;
  add_gemm(block, shape, tokens, h, moe.experts, Split::kColumns);  // router
  block.gemms.back().fp8 = false;  // a plain BF16 GEMM, not a Transformer Engine linear
  const auto grouped = static_cast<double>(local_experts);
  block.gemms.push_back(GemmWork{per_expert, static_cast<double>(expert_rank.up_width), static_cast<double>(h), 1,
                                 grouped, shape.fp8, true});
  block.gemms.push_back(
      GemmWork{per_expert, static_cast<double>(h), static_cast<double>(ffn_expert), 1, grouped, shape.fp8, true});
  const double routed_flops = block.gemms[block.gemms.size() - 2].flops() + block.gemms.back().flops();
  // Over the average, the busiest rank's excess is time, not model work;
  // under it (a capacity factor below 1 drops tokens) the dropped tokens'
  // expert work is not done, and so not counted either.
  block.excess_flops = load > 1 ? routed_flops * (1 - 1 / load) : 0;
  if (moe.shared_experts > 0) {
    add_gemm(block, shape, tokens, h, full.up_width, Split::kColumns, moe.shared_experts);
    add_gemm(block, shape, tokens, moe.expert_ffn, h, Split::kRows, moe.shared_experts);
  }
  // Routed pairs this rank runs, per token of the micro-batch's b s / c: the
  // busiest micro-batch's for time; for memory the expected share, as a rank
  // holds many micro-batches' and layers' draws at once.
  const double pairs = gathered / tokens * static_cast<double>(routed) * load;
  const double held_load =
      shape.capacity_factor > 0 ? std::min(shape.expert_skew, shape.capacity_factor) : shape.expert_skew;
  const double held = gathered / tokens * static_cast<double>(routed) * held_load;
  const auto per_token = [&](double bytes) { return static_cast<std::int64_t>(std::llround(bytes)); };
  const std::int64_t shared = moe.shared_experts;
  // Whole: router input, fp32 routing probabilities, and per routed pair the
  // dispatched input (fc1's) and its fp32 routing weight. Megatron-core
  // (core_r0.14.0 experts.py, TEGroupedMLP) applies the weights inside the
  // activation (weighted_bias_swiglu saves fc1's output and the weights), so
  // unpermute runs without them and no expert output is kept for their
  // gradient; the DeepSeek-V3 proxy's per-stage memory in
  // tests/models/moe_stage_memory_test.cc shows it.
  const double routed_whole = static_cast<double>(routed) * load;
  const double routed_held = static_cast<double>(routed) * held_load;
  block.stored_whole += e * h + 4 * moe.experts + per_token(routed_held * (e * h + 4));
  block.norm_output_whole += e * h;  // the router's input
  block.stored_split += per_token(held * e * expert_rank.stored_tensors * ffn_expert) +
                        shared * e * shared_rank.stored_tensors * ffn_shared;
  // Of those, each routed pair's activation output (fc2's input), which
  // moe_act recomputes from fc1's output.
  block.activation_split = per_token(held * e * ffn_expert);
  block.activation_traffic_split = pairs * e * expert_rank.act_traffic * ffn_expert;
  block.wgrad_whole += e * h + 4 * moe.experts + per_token(routed_held * 2 * e * h) + shared * e * h;
  block.wgrad_split +=
      per_token(held * e * (expert_rank.up_width + ffn_expert)) + shared * e * (shared_rank.up_width + ffn_shared);
  // Router softmax and top-k over fp32 logits; permute and unpermute of every
  // routed pair (read + write each).
  block.routing_traffic_whole = 8.0 * moe.experts + routed_whole * 4 * e * h;
  block.traffic_whole += block.routing_traffic_whole;
  block.traffic_split += pairs * e * expert_rank.act_traffic * ffn_expert +
                         static_cast<double>(shared * e * shared_rank.act_traffic * ffn_shared);
  // moe keeps the router's input and drops the routing probabilities, each
  // routed pair's copies and every expert's tensors; shared_experts the
  // shared experts' tensors alone.
  block.routed = true;
  block.module_whole = block.stored_whole - e * h;
  block.module_split = block.stored_split;
  block.module_traffic_whole = block.traffic_whole;
  block.module_traffic_split = block.traffic_split;
  block.shared_split = shared * e * shared_rank.stored_tensors * ffn_shared;
  block.shared_traffic_split = static_cast<double>(shared * e * shared_rank.act_traffic * ffn_shared);
  block.shared_gemms = shared > 0 ? 2 : 0;
  if (dispatched) {
    // Shared experts run on every token, gathered over t like a dense MLP.
    block.tp_collectives = shared > 0 ? 1 : 0;
    const double sent = local * static_cast<double>(routed) * load * static_cast<double>(h * e);
    if (shape.ep > 1) {
      block.expert_collectives.push_back({CollectiveKind::kAllToAll, sent, 2, static_cast<double>(routed), moe.experts,
                                          moe.router_groups, moe.router_group_top_k});
    }
    if (shape.etp > 1) {
      const double bytes = sent * shape.etp;
      block.expert_collectives.push_back({CollectiveKind::kAllGather, bytes, 1});
      block.expert_collectives.push_back({CollectiveKind::kReduceScatter, bytes, 1});
    }
  }
  add_norm_and_residual(block, model, shape);
  return block;
}

}  // namespace pipeplan::models::detail
