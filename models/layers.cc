// Expands a model into [embedding, blocks..., output] and assembles each
// transformer block's F/B/W work and memory from its attention and MLP
// halves (models/attention_costs.cc, models/mlp_costs.cc).
#include "models/layers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "models/deepep_buffers.h"
#include "models/expert_parallel.h"
#include "models/layer_blocks.h"
#include "models/model_limits.h"

namespace pipeplan::models {
namespace detail {

std::int64_t RankShape::whole(std::int64_t per_token) const {
  const std::int64_t bytes = per_token * tokens;
  return sequence_parallel ? (bytes + tp - 1) / tp : bytes;
}

void add_gemm(BlockCost& block, const RankShape& shape, double tokens, std::int64_t in, std::int64_t out,
              Split split, double count) {
  if (count <= 0) return;
  const double t = shape.tp;
  const double rows = split == Split::kRows ? static_cast<double>(in) / t : static_cast<double>(in);
  const double columns = split == Split::kColumns ? static_cast<double>(out) / t : static_cast<double>(out);
  block.gemms.push_back(GemmWork{tokens, columns, rows, count, 1, shape.fp8});
}

std::int64_t norm_params(const ModelConfig& model, std::int64_t width) {
  return model.norm == NormKind::kLayerNorm ? 2 * width : width;  // LayerNorm has a bias
}

// The tensor-parallel collectives of `calls` halves of a block. Megatron:
// one collective after attention and one after the MLP, each of the whole
// b x s x h tensor; with sequence parallelism each becomes an all-gather +
// reduce-scatter pair of the same payload (Korthikanti et al. 2022 Sec.
// 4.2.2).
std::vector<CollectiveWork> tensor_parallel_collectives(const ModelConfig& model, const RankShape& shape,
                                                        double calls) {
  if (shape.tp <= 1 || calls <= 0) return {};
  const double payload = static_cast<double>(shape.tokens) * model.hidden * static_cast<double>(shape.element);
  if (shape.sequence_parallel) {
    return {{CollectiveKind::kAllGather, payload, calls}, {CollectiveKind::kReduceScatter, payload, calls}};
  }
  return {{CollectiveKind::kAllReduce, payload, calls}};
}

}  // namespace detail

namespace {

using detail::BlockCost;
using detail::RankShape;
using detail::add_recompute;
using detail::set_memory;
using detail::tensor_parallel_collectives;

// The message is formatted only when the check fails: the search expands
// the layers of thousands of shapes that pass.
template <typename... Args>
void require(bool ok, fmt::format_string<Args...> format, Args&&... args) {
  if (!ok) throw InputError(fmt::format(format, std::forward<Args>(args)...));
}

// Stated limits on a model's sizes, far above any real model, so that
// every count the cost model forms (parameters, bytes, score elements) is
// exact in 64 bits. Checked in long double before anything is expanded.
struct SizeLimit {
  const char* field;
  long double value;
  long double limit;
};

void check_sizes(const ModelConfig& model, const TrainingShape& shape) {
  const auto d = [](auto value) { return static_cast<long double>(value); };
  const MoeConfig& moe = model.moe;
  const MlaConfig& mla = model.mla;
  const SizeLimit limits[] = {
      {"layers", d(model.layers), kMaxCount},          {"hidden", d(model.hidden), kMaxDimension},
      {"ffn", d(model.ffn), kMaxDimension},            {"heads", d(model.heads), kMaxCount},
      {"head_dim", d(model.head_dim), kMaxDimension},  {"vocab", d(model.vocab), kMaxVocab},
      {"context", d(model.context), kMaxTokens},       {"moe.experts", d(moe.experts), kMaxCount},
      {"moe.expert_ffn", d(moe.expert_ffn), kMaxDimension},
      {"moe.shared_experts", d(moe.shared_experts), kMaxCount},
      {"mla.q_lora_rank", d(mla.q_lora_rank), kMaxDimension},
      {"mla.kv_lora_rank", d(mla.kv_lora_rank), kMaxDimension},
      {"mla.qk_nope_head_dim", d(mla.qk_nope_head_dim), kMaxDimension},
      {"mla.qk_rope_head_dim", d(mla.qk_rope_head_dim), kMaxDimension},
      {"mla.v_head_dim", d(mla.v_head_dim), kMaxDimension},
  };
  for (const SizeLimit& limit : limits) {
    require(limit.value <= limit.limit, "model '{}': {} = {:.0f} is over the limit of {:.0f}", model.name, limit.field,
            static_cast<double>(limit.value), static_cast<double>(limit.limit));
  }
  // Every weight matrix a layer could hold, counted generously.
  const long double h = d(model.hidden);
  const long double attention = 4 * h * d(model.heads) * d(model.head_dim) + 4 * h * d(mla.kv_lora_rank + mla.q_lora_rank);
  const long double mlp = 3 * h * (d(model.ffn) + d(moe.expert_ffn) * d(moe.experts + moe.shared_experts));
  const long double params = d(model.layers) * (attention + mlp) + 2 * d(model.vocab) * h + d(model.context) * h;
  require(params <= kMaxParams, "model '{}' would have about {:.3g} parameters, over the limit of {:.3g}", model.name,
          static_cast<double>(params), static_cast<double>(kMaxParams));
  const long double tokens = d(shape.micro_batch_size) * d(shape.seq_len);
  require(tokens <= kMaxTokens,
          "micro-batch size {} x sequence {} = {:.3g} tokens per micro-batch, over "
          "the limit of {:.3g}",
          shape.micro_batch_size, shape.seq_len, static_cast<double>(tokens), static_cast<double>(kMaxTokens));
  const long double scores = tokens * d(shape.seq_len) * d(model.heads);
  require(scores <= kMaxScoreElements,
          "micro-batch size {} x sequence {}^2 x {} heads = {:.3g} attention scores, over the limit of "
          "{:.3g}; lower the sequence or the micro-batch size",
          shape.micro_batch_size, shape.seq_len, model.heads, static_cast<double>(scores),
          static_cast<double>(kMaxScoreElements));
}

void validate(const ModelConfig& model, const TrainingShape& shape) {
  const std::string& name = model.name;
  require(model.layers >= 1 && model.hidden >= 1 && model.ffn >= 1 && model.vocab >= 1,
          "model '{}': layers, hidden, ffn and vocab must be positive", name);
  require(model.heads >= 1 && model.kv_heads >= 1 && model.head_dim >= 1,
          "model '{}': heads, kv_heads and head_dim must be positive", name);
  check_sizes(model, shape);
  require(model.heads % model.kv_heads == 0, "model '{}': kv_heads ({}) must divide heads ({})", name, model.kv_heads,
          model.heads);
  if (shape.recompute == Recompute::kSelective) {
    const std::string refusal = recompute_modules_refusal(model, shape.recompute_modules);
    require(refusal.empty(), "{}", refusal);
  }
  if (model.moe.enabled()) {
    const MoeConfig& moe = model.moe;
    require(moe.top_k >= 1 && moe.top_k <= moe.experts,
            "model '{}': moe.top_k ({}) must be between 1 and moe.experts ({}): a token is routed to that many "
            "distinct experts",
            name, moe.top_k, moe.experts);
    require(moe.expert_ffn >= 1 && moe.shared_experts >= 0,
            "model '{}': moe.expert_ffn must be > 0 and moe.shared_experts >= 0", name);
    require(moe.dense_layers >= 0 && moe.dense_layers <= model.layers,
            "model '{}': moe.dense_layers must be between 0 and layers ({})", name, model.layers);
  }
  detail::check_mtp_layers(model, shape);
  require(shape.micro_batch_size >= 1, "micro-batch size must be >= 1");
  require(shape.seq_len >= 1, "sequence length must be >= 1");
  require(shape.tp >= 1, "tensor-parallel size must be >= 1");
  require(shape.cp >= 1, "context-parallel size must be >= 1");
  if (shape.cp > 1) {
    require(shape.seq_len % (2 * shape.cp) == 0,
            "--cp {}: the sequence ({}) must divide into 2 x cp = {} chunks (each rank takes two, for "
            "causal load balance); use a --cp whose double divides {}",
            shape.cp, shape.seq_len, 2 * shape.cp, shape.seq_len);
    require(shape.flash_attention,
            "--cp {}: context parallelism runs fused (flash) attention; drop "
            "--no-flash-attention or use --cp 1",
            shape.cp);
  }
  require(shape.activation_bytes_per_element >= 1, "activation bytes per element must be >= 1");
  check_expert_parallel(model, shape);
  check_tensor_parallel(model, shape.tp);
}

RankShape rank_shape(const TrainingShape& shape) {
  RankShape rank;
  rank.batch = shape.micro_batch_size;
  rank.cp = shape.cp;
  rank.seq = shape.seq_len / shape.cp;
  rank.tokens = rank.batch * rank.seq;
  rank.tp = shape.tp;
  rank.ep = shape.ep;
  rank.etp = shape.expert_tp();
  rank.expert_skew = shape.expert_skew();
  rank.capacity_factor = shape.routing.capacity_factor;
  rank.sequence_parallel = shape.sequence_parallel && shape.tp > 1;
  rank.flash = shape.flash_attention;
  rank.fp8 = shape.runtime.fp8;
  rank.fp8_weights = shape.runtime.fp8 && shape.runtime.fp8_param_gather;
  rank.element = shape.activation_bytes_per_element;
  return rank;
}

// The backward's collectives: an all-reduce (or all-to-all) stays one, an
// all-gather becomes a reduce-scatter and back.
std::vector<CollectiveWork> conjugate(std::vector<CollectiveWork> collectives) {
  for (CollectiveWork& call : collectives) {
    if (call.kind == CollectiveKind::kAllGather) {
      call.kind = CollectiveKind::kReduceScatter;
    } else if (call.kind == CollectiveKind::kReduceScatter) {
      call.kind = CollectiveKind::kAllGather;
    }
  }
  return collectives;
}

// Forward work of a block made of `attention` then `mlp`.
PassWork block_forward(const ModelConfig& model, const BlockCost& attention, const BlockCost& mlp,
                       const RankShape& shape) {
  PassWork pass;
  pass.gemms.reserve(attention.gemms.size() + mlp.gemms.size());
  pass.gemms = attention.gemms;
  pass.gemms.insert(pass.gemms.end(), mlp.gemms.begin(), mlp.gemms.end());
  pass.attention = attention.attention;
  const double tokens = static_cast<double>(shape.tokens);
  const double whole = attention.traffic_whole + mlp.traffic_whole;
  pass.memory_bytes = tokens * (shape.sequence_parallel ? whole / shape.tp : whole) +
                      tokens * (attention.traffic_split + mlp.traffic_split) + attention.traffic_scores;
  pass.routing_bytes = tokens * shape.per_rank_whole(mlp.routing_traffic_whole);
  pass.collectives = tensor_parallel_collectives(model, shape, attention.tp_collectives + mlp.tp_collectives);
  pass.expert_collectives = mlp.expert_collectives;
  return pass;
}

// Transformer Engine quantizes what each FP8 GEMM reads: the forward casts
// its input (bf16 read, the FP8 copy and its transpose for the weight
// gradient written: 4 bytes per element), the backward its output gradient
// alike. The weights' FP8 copies are cast once per step (LayerCost's
// fp8_weight_copy_bytes), not per micro-batch.
void add_fp8_casts(LayerCost& layer) {
  for (const GemmWork& gemm : layer.forward.gemms) {
    if (!gemm.fp8) continue;
    layer.forward.memory_bytes += 4 * gemm.m * gemm.k * gemm.count * gemm.batch;
    layer.backward_input.memory_bytes += 4 * gemm.m * gemm.n * gemm.count * gemm.batch;
  }
}

LayerCost transformer_layer(const ModelConfig& model, const BlockCost& attention, const BlockCost& mlp,
                            const RankShape& shape, Recompute recompute, unsigned modules, bool moe) {
  LayerCost layer;
  layer.kind = LayerKind::kTransformer;
  layer.moe = moe;
  layer.params = attention.params + mlp.params;
  layer.active_params = attention.params + mlp.active_params;
  layer.params_per_rank = attention.params_per_rank + mlp.params_per_rank;
  layer.expert_params_per_rank = mlp.expert_params_per_rank;
  layer.excess_flops = mlp.excess_flops;
  // Norm weights (and a router) are among them, a few per million of a block's.
  if (shape.fp8) {
    layer.fp8_params_per_rank = layer.params_per_rank;
    layer.fp8_weight_copy_bytes = shape.fp8_weights ? 0 : 2 * layer.params_per_rank;
  }
  layer.forward = block_forward(model, attention, mlp, shape);
  // B: each GEMM's input-gradient GEMM, the attention core's gradient
  // (twice its FLOPs: Qi et al. 2024 Table 1, B = sbh(24h + 8s)), the
  // conjugate collectives (an all-gather's is a reduce-scatter).
  PassWork& backward = layer.backward_input;
  for (const GemmWork& gemm : layer.forward.gemms) backward.gemms.push_back(gemm.input_gradient());
  for (AttentionWork core : layer.forward.attention) {
    core.gradient = true;
    core.exchange_bytes *= 2;  // K and V go round, dK and dV come back
    backward.attention.push_back(core);
  }
  backward.memory_bytes = 2 * layer.forward.memory_bytes;
  backward.routing_bytes = 2 * layer.forward.routing_bytes;
  backward.collectives = conjugate(layer.forward.collectives);
  backward.expert_collectives = conjugate(layer.forward.expert_collectives);
  // W: each GEMM's weight-gradient GEMM (W = 24sbh^2).
  for (const GemmWork& gemm : layer.forward.gemms) layer.backward_weight.gemms.push_back(gemm.weight_gradient());
  add_fp8_casts(layer);
  set_memory(layer, attention, mlp, shape, recompute, modules, model.hidden);
  // Context parallelism's backward holds two K,V blocks and two dK,dV
  // blocks of the ring in flight.
  for (const AttentionWork& core : layer.forward.attention) layer.working_bytes += static_cast<std::int64_t>(4 * core.exchange_bytes);
  add_recompute(layer, attention, mlp, model, shape, recompute, modules);
  layer.output_bytes = shape.split(shape.tokens * model.hidden * shape.element);
  return layer;
}

double layer_flops(const LayerCost& layer, bool recompute) {
  const double total = layer.forward.flops() + layer.backward_input.flops() + layer.backward_weight.flops();
  // Model FLOPs: no recomputation, and every token at its experts' average load.
  return recompute ? total : total - layer.recompute_flops - 3 * layer.excess_flops;
}

double flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape, bool recompute) {
  double total = 0;
  for (const LayerCost& layer : layers.layers) total += layer_flops(layer, recompute);
  return total * shape.tp * shape.cp;  // every rank does 1/(t c) of the work
}

// ZeRO-2 keeps only its shard of the gradients, so each micro-batch's are
// reduce-scattered as the weight-gradient pass makes them; ZeRO-3 (FSDP)
// also keeps only its shard of the weights, gathered (bf16) before each
// forward and again before the backward (resharded after the forward, as
// FSDP's default), one layer at a time with the next one prefetched.
// Pipelined, both sync once per step instead (step/model_simulation.cc).
void add_shard_collectives(LayerCost& layer, const TrainingShape& shape) {
  if (shape.zero < ZeroStage::kGradients || shape.weight_replicas() <= 1 || shape.shards_once_per_step()) return;
  const double params = static_cast<double>(layer.params_per_rank);
  layer.backward_weight.shard_collectives.push_back(
      {CollectiveKind::kReduceScatter, params * shape.gradient_bytes(), 1});
  // The layer's whole gradient lives until it is reduced.
  layer.working_bytes += static_cast<std::int64_t>(params * shape.gradient_bytes());
  if (shape.zero < ZeroStage::kWeights) return;
  const double weights = 2 * params;
  layer.forward.shard_collectives.push_back({CollectiveKind::kAllGather, weights, 1});
  layer.backward_input.shard_collectives.push_back({CollectiveKind::kAllGather, weights, 1});
  // Its gathered weights and the next layer's, prefetched.
  layer.working_bytes += static_cast<std::int64_t>(2 * weights);
}

}  // namespace

LayerKinds expand_layer_kinds(const ModelConfig& model, const TrainingShape& shape) {
  validate(model, shape);
  const RankShape rank = rank_shape(shape);
  const BlockCost attention = detail::attention_block(model, rank);
  const int first_moe = model.moe.enabled() ? model.moe.dense_layers : model.layers;
  // Blocks are identical but for their names: cost each kind once.
  LayerKinds result;
  result.kinds.push_back(detail::embedding_layer(model, rank));
  const int embedding = 0;
  int dense = -1, moe = -1;
  if (first_moe > 0) {
    dense = static_cast<int>(result.kinds.size());
    result.kinds.push_back(transformer_layer(model, attention, detail::dense_mlp_block(model, rank), rank,
                                             shape.recompute, shape.recompute_modules, false));
  }
  if (first_moe < model.layers) {
    moe = static_cast<int>(result.kinds.size());
    result.kinds.push_back(transformer_layer(model, attention, detail::moe_block(model, rank), rank, shape.recompute,
                                             shape.recompute_modules, true));
    if (shape.routing.dispatcher == MoeDispatcher::kDeepEp) {
      result.kinds.back().dispatcher_buffer_bytes =
          deepep_buffer_bytes(model.hidden * std::max(rank.element, std::int64_t{2}), shape.ep * shape.expert_tp());
    }
  }
  const int output = static_cast<int>(result.kinds.size());
  result.kinds.push_back(detail::output_layer(model, rank));
  if (shape.mtp_layers > 0) {
    const LayerCost last = result.kinds[static_cast<std::size_t>(moe >= 0 ? moe : dense)];
    detail::add_mtp_modules(result.kinds.back(), model, rank, last, shape.mtp_layers);
  }
  for (LayerCost& layer : result.kinds) add_shard_collectives(layer, shape);
  const auto count = static_cast<std::size_t>(model.layers) + 2;
  result.kind_at.reserve(count);
  result.names.reserve(count);
  result.kind_at.push_back(embedding);
  result.names.push_back(result.kinds[embedding].name);
  for (int index = 0; index < model.layers; ++index) {
    result.kind_at.push_back(index < first_moe ? dense : moe);
    result.names.push_back("layer " + std::to_string(index));
  }
  result.kind_at.push_back(output);
  result.names.push_back(result.kinds[static_cast<std::size_t>(output)].name);
  for (int position = 0; position < result.positions(); ++position) {
    result.total_params += result.at(position).params;
    result.active_params += result.at(position).active_params;
  }
  result.embedding_params = result.kinds[embedding].params;
  return result;
}

ModelLayers expand_layers(const ModelConfig& model, const TrainingShape& shape) {
  const LayerKinds kinds = expand_layer_kinds(model, shape);
  ModelLayers result;
  result.layers.reserve(kinds.kind_at.size());
  for (int position = 0; position < kinds.positions(); ++position) {
    result.layers.emplace_back(kinds.at(position)).name = kinds.names[static_cast<std::size_t>(position)];
  }
  result.total_params = kinds.total_params;
  result.active_params = kinds.active_params;
  result.embedding_params = kinds.embedding_params;
  return result;
}

double model_flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape) {
  return flops_per_microbatch(layers, shape, false);
}

double model_flops_per_microbatch(const LayerKinds& layers, const TrainingShape& shape) {
  // Summed position by position, as expand_layers' are: the same figure to the last bit.
  std::vector<double> flops;
  for (const LayerCost& kind : layers.kinds) flops.push_back(layer_flops(kind, false));
  double total = 0;
  for (const int kind : layers.kind_at) total += flops[static_cast<std::size_t>(kind)];
  return total * shape.tp * shape.cp;
}

double hardware_flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape) {
  return flops_per_microbatch(layers, shape, true);
}

}  // namespace pipeplan::models
