// The attention half of a transformer block: pre-norm, projections, the
// attention core and the residual add. Stored tensors follow Korthikanti et
// al. 2022 Sec. 4.1; GEMM and attention FLOPs Narayanan et al. 2021 App. and
// Qi et al. 2024 Table 1.
#include "models/layer_blocks.h"

namespace pipeplan::models::detail {
namespace {

// What every attention variant shares: the pre-norm and the residual add
// with its (optional) dropout; Korthikanti's "layernorm input" and "output
// dropout mask".
void add_norm_and_residual(BlockCost& block, const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  block.params += norm_params(model, h);
  block.params_per_rank += norm_params(model, h);
  block.stored_whole += e * h + (model.dropout ? h : 0);
  // Norm: read + write; residual add: two reads, one write; 1-byte mask.
  block.traffic_whole += 2.0 * e * h + 3.0 * e * h + (model.dropout ? h : 0);
  block.norm_traffic_whole += 2.0 * e * h;
}

// The attention core (Q K^T, softmax, dropout, scores x V) over the full
// s x s square, the convention of Narayanan et al. 2021 Eq. 3. `kv_width`:
// key and value elements per token on this rank, what context parallelism
// sends round its ring.
void add_core(BlockCost& block, const ModelConfig& model, const RankShape& shape, std::int64_t qk_head,
              std::int64_t v_head, std::int64_t kv_width) {
  const std::int64_t heads = model.heads / shape.tp;
  const std::int64_t b = shape.batch;
  const std::int64_t s = shape.seq;
  const std::int64_t e = shape.element;
  const double exchange = shape.cp > 1 ? static_cast<double>(shape.tokens * kv_width * e) : 0.0;
  // Each ring step after the first merges its partial output into the
  // running one by their softmax statistics: the fp32 output read and
  // written (the backward's dQ, dK, dV accumulate alike: twice the forward's
  // traffic, as for every elementwise kernel here).
  block.traffic_scores += static_cast<double>(shape.cp - 1) * 2 * 4 * static_cast<double>(shape.tokens) *
                          static_cast<double>(heads * v_head);
  block.attention.push_back(AttentionWork{static_cast<double>(b * heads), static_cast<double>(s),
                                         static_cast<double>(qk_head), static_cast<double>(v_head), false, shape.cp,
                                         exchange});
  const std::int64_t scores = b * heads * s * s;
  if (shape.flash) {
    // Flash attention keeps only the fp32 log-sum-exp per row.
    block.stored_scores = 4 * b * heads * s;
    return;
  }
  // Softmax output, and with dropout its 1-byte mask and the dropped scores:
  // Korthikanti's 5as^2b for 2-byte elements.
  block.stored_scores = scores * (e + (model.dropout ? 1 + e : 0));
  block.traffic_scores = static_cast<double>(scores) * (2 * e + (model.dropout ? 2 * e + 1 : 0));
}

BlockCost grouped_query_attention(const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const std::int64_t q = std::int64_t{model.heads} * model.head_dim;
  const std::int64_t kv = std::int64_t{model.kv_heads} * model.head_dim;
  const std::int64_t q_rank = shape.split(q);
  const std::int64_t qkv_rank = q_rank + 2 * shape.split(kv);
  BlockCost block;
  block.params = h * (q + 2 * kv) + q * h;
  block.params_per_rank = h * qkv_rank + q_rank * h;
  if (model.biases) {
    // The QKV bias is split with its column-parallel matrix; the output
    // projection's (row-parallel) bias is whole on every rank.
    block.params += q + 2 * kv + h;
    block.params_per_rank += qkv_rank + h;
  }
  add_gemm(block, shape, static_cast<double>(shape.tokens), h, q + 2 * kv, Split::kColumns);
  add_gemm(block, shape, static_cast<double>(shape.tokens), q, h, Split::kRows);
  add_core(block, model, shape, model.head_dim, model.head_dim, 2 * shape.split(kv));
  // QKV input (whole: the pre-norm's output); Q, K, V (after rope) and the
  // output projection's input.
  block.stored_whole += e * h;
  block.norm_output_whole += e * h;
  block.stored_split += e * (qkv_rank + q_rank);
  // W needs each linear's input and output gradient: QKV (h in, q+2kv out),
  // output projection (q in, h out).
  block.wgrad_whole += 2 * e * h;
  block.wgrad_split += e * (qkv_rank + q_rank);
  if (model.position == PositionEmbedding::kRope) block.traffic_split += 2.0 * e * (qkv_rank - shape.split(kv));
  add_norm_and_residual(block, model, shape);
  return block;
}

// Multi-head latent attention (DeepSeek-V2 Sec. 2.1). Megatron keeps the two
// down-projections and their norms whole on every tensor-parallel rank
// ("duplicated" linears); the up- and output projections are split.
BlockCost latent_attention(const ModelConfig& model, const RankShape& shape) {
  const MlaConfig& mla = model.mla;
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const std::int64_t heads = model.heads;
  const std::int64_t heads_rank = heads / shape.tp;
  const std::int64_t qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  const std::int64_t q_lora = mla.q_lora_rank;
  const std::int64_t kv_lora = mla.kv_lora_rank;
  const std::int64_t kv_down = kv_lora + mla.qk_rope_head_dim;
  const std::int64_t kv_up = heads * (mla.qk_nope_head_dim + mla.v_head_dim);
  const std::int64_t v = heads * mla.v_head_dim;
  const double tokens = static_cast<double>(shape.tokens);
  BlockCost block;
  const std::int64_t q_whole = q_lora > 0 ? h * q_lora + norm_params(model, q_lora) : 0;
  const std::int64_t q_split = (q_lora > 0 ? q_lora : h) * heads * qk_head;
  const std::int64_t kv_whole = h * kv_down + norm_params(model, kv_lora);
  const std::int64_t split = q_split + kv_lora * kv_up + v * h;
  block.params = q_whole + kv_whole + split;
  block.params_per_rank = q_whole + kv_whole + split / shape.tp;
  // The down-projections are costed as split like the rest (1/t of their
  // FLOPs per rank), though Megatron runs them whole on every rank.
  if (q_lora > 0) add_gemm(block, shape, tokens, h, q_lora, Split::kColumns);
  add_gemm(block, shape, tokens, q_lora > 0 ? q_lora : h, heads * qk_head, Split::kColumns);
  add_gemm(block, shape, tokens, h, kv_down, Split::kColumns);
  add_gemm(block, shape, tokens, kv_lora, kv_up, Split::kColumns);
  add_gemm(block, shape, tokens, v, h, Split::kRows);
  // MLA's keys and values go round whole per head (the latent is expanded).
  add_core(block, model, shape, qk_head, mla.v_head_dim, heads_rank * (qk_head + mla.v_head_dim));
  // Whole: the down-projections' input, the latent vectors before and after
  // their norms. Split: Q, K, V and the output projection's input.
  block.stored_whole += e * (h + 2 * q_lora + 2 * kv_lora);
  block.norm_output_whole += e * h;
  block.stored_split += e * heads_rank * (2 * qk_head + 2 * mla.v_head_dim);
  block.wgrad_whole += e * (h + 2 * q_lora + kv_down + kv_lora + h);
  block.wgrad_split += e * heads_rank * (qk_head + mla.qk_nope_head_dim + 2 * mla.v_head_dim);
  block.traffic_whole += 2.0 * e * (q_lora + kv_lora);  // the latent norms
  block.traffic_split += 2.0 * e * heads_rank * mla.qk_rope_head_dim;  // rope on the query's rope part
  block.up_proj_split = e * heads_rank * (2 * qk_head + mla.v_head_dim);
  block.up_proj_traffic_split = 2.0 * e * heads_rank * mla.qk_rope_head_dim;
  const std::size_t q_up = q_lora > 0 ? 1 : 0;
  block.up_proj_gemms = {block.gemms[q_up], block.gemms[q_up + 2]};
  add_norm_and_residual(block, model, shape);
  return block;
}

}  // namespace

BlockCost attention_block(const ModelConfig& model, const RankShape& shape) {
  return model.mla.enabled() ? latent_attention(model, shape) : grouped_query_attention(model, shape);
}

}  // namespace pipeplan::models::detail
