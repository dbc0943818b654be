#include "models/serving_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "common/error.h"
#include "models/layers.h"
#include "models/time_model.h"

namespace pipeplan::models {
namespace {

constexpr std::int64_t kBf16 = 2;
constexpr std::int64_t kFp32 = 4;
// vLLM's IntermediateTensors between stages: the hidden states and the
// residual stream, each tokens x hidden in BF16.
constexpr double kHopTensors = 2;
constexpr double kTokenIdBytes = 8;  // a sampled token id (int64)

TrainingShape forward_shape(int tokens, int tp, bool fp8) {
  TrainingShape shape;
  shape.micro_batch_size = 1;
  shape.seq_len = tokens;
  shape.tp = tp;
  shape.runtime.fp8 = fp8;
  return shape;
}

// Expected distinct experts that `tokens` tokens reach when each picks
// top_k of `experts` uniformly: every one of them has its weights read.
double experts_reached(const MoeConfig& moe, int tokens) {
  const double miss = 1.0 - static_cast<double>(moe.top_k) / moe.experts;
  return moe.experts * (1.0 - std::pow(miss, tokens));
}

// The forward without its attention cores (costed per step from the KV
// cache) and its tensor-parallel collectives (serving_collectives_s) and, in a mixture of experts, with the routed experts' grouped
// GEMMs over the experts the step's tokens reach rather than all of them:
// at a decode batch of a few tokens most experts' weights are never read.
PassWork serving_forward(const LayerCost& layer, const ModelConfig& model, int tokens) {
  PassWork pass = layer.forward;
  pass.attention.clear();
  pass.collectives.clear();
  if (!layer.moe) return pass;
  const double reached = experts_reached(model.moe, tokens);
  for (GemmWork& gemm : pass.gemms) {
    if (gemm.batch != model.moe.experts) continue;  // the routed experts' grouped GEMMs
    gemm.m *= gemm.batch / reached;
    gemm.batch = reached;
  }
  return pass;
}

// A tensor-parallel all-reduce as inference engines run it within an NVLink
// domain: the ring's 2 (n - 1) latency-bound steps, or for small messages
// one shot (vLLM's custom all-reduce: every rank reads its n - 1 peers'
// buffers at once and sums them, two flag exchanges around it), whichever
// is sooner. Over the network, the ring.
double serving_all_reduce_s(double bytes, int ranks, const HardwareConfig& hardware) {
  const LinkSpec link = link_for_group(hardware, ranks, 1);
  const double ring = all_reduce_s(bytes, ranks, link);
  if (!on_node_link(hardware, ranks) || ranks <= 1 || link.bandwidth <= 0) return ring;
  const double one_shot = 2 * link.latency_s + (ranks - 1) * bytes / link.bandwidth;
  return std::min(ring, one_shot);
}

// The forward's tensor-parallel collectives, which serving_forward leaves out.
double serving_collectives_s(const PassWork& pass, const HardwareConfig& hardware, int tp) {
  const LinkSpec link = link_for_group(hardware, tp, 1);
  double seconds = 0;
  for (const CollectiveWork& call : pass.collectives) {
    switch (call.kind) {
      case CollectiveKind::kAllReduce: seconds += call.count * serving_all_reduce_s(call.bytes, tp, hardware); break;
      case CollectiveKind::kAllGather: seconds += call.count * all_gather_s(call.bytes, tp, link); break;
      case CollectiveKind::kReduceScatter: seconds += call.count * reduce_scatter_s(call.bytes, tp, link); break;
      case CollectiveKind::kAllToAll: seconds += call.count * all_to_all_s(call.bytes, tp, 1, hardware); break;
    }
  }
  return seconds;
}

// Attention widths per head: MLA decodes in the latent space (the key and
// value projections absorbed into the query and output ones, as vLLM and
// SGLang run it) and prefills with the decompressed heads.
struct HeadDims {
  double qk = 0;
  double v = 0;
};
HeadDims prefill_dims(const ModelConfig& model) {
  if (!model.mla.enabled()) return {static_cast<double>(model.head_dim), static_cast<double>(model.head_dim)};
  return {static_cast<double>(model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim),
          static_cast<double>(model.mla.v_head_dim)};
}
HeadDims decode_dims(const ModelConfig& model) {
  if (!model.mla.enabled()) return prefill_dims(model);
  return {static_cast<double>(model.mla.kv_lora_rank + model.mla.qk_rope_head_dim),
          static_cast<double>(model.mla.kv_lora_rank)};
}

}  // namespace

std::int64_t kv_bytes_per_token_layer(const ModelConfig& model, int tp, int element_bytes) {
  if (model.mla.enabled()) return (model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) * std::int64_t{element_bytes};
  const std::int64_t heads = std::max(1, model.kv_heads / std::max(1, tp));
  return 2 * heads * model.head_dim * std::int64_t{element_bytes};
}

std::int64_t kv_bytes_per_token(const ModelConfig& model, int tp, int element_bytes) {
  return model.layers * kv_bytes_per_token_layer(model, tp, element_bytes);
}

std::vector<int> even_stage_layers(int layers, int stages) {
  if (stages < 1) return {};
  std::vector<int> split(static_cast<std::size_t>(stages), layers / stages);
  // vLLM's get_pp_indices: the remainder goes to the stages before the last
  // (which also holds the output layer), nearest the last first.
  for (int i = 2; i < layers % stages + 2; ++i) ++split[static_cast<std::size_t>(stages - i)];
  return split;
}

ServingStepModel::ServingStepModel(const ModelConfig& model, const HardwareConfig& hardware, ServingLayout layout)
    : model_(model), hardware_(hardware), layout_(std::move(layout)) {
  check_tensor_parallel(model_, layout_.tp);
  if (layout_.stages() < 1) throw InputError("a serving pipeline needs at least one stage");
  if (std::accumulate(layout_.stage_layers.begin(), layout_.stage_layers.end(), 0) != model_.layers) {
    throw InputError(fmt::format("the stages' layers add up to {}, not the model's {}",
                                 std::accumulate(layout_.stage_layers.begin(), layout_.stage_layers.end(), 0),
                                 model_.layers));
  }
  for (int layers : layout_.stage_layers) {
    if (layers < 1) throw InputError(fmt::format("{} stages leave a stage without layers", layout_.stages()));
  }
  kv_layer_bytes_ = kv_bytes_per_token_layer(model_, layout_.tp, layout_.kv_element_bytes);
  const LayerKinds kinds = expand_layer_kinds(model_, forward_shape(1, layout_.tp, layout_.fp8_weights));
  const std::int64_t block_bytes = layout_.fp8_weights ? 1 : kBf16;
  int position = 1;
  for (int stage = 0; stage < layout_.stages(); ++stage) {
    std::int64_t bytes = 0;
    for (int i = 0; i < layout_.stage_layers[static_cast<std::size_t>(stage)]; ++i) {
      bytes += kinds.at(position++).params_per_rank * block_bytes;
    }
    if (stage == 0) bytes += kinds.at(0).params_per_rank * kBf16;
    if (stage == layout_.stages() - 1) {
      std::int64_t output = kinds.at(kinds.positions() - 1).params_per_rank;
      // One stage holds one table when the embeddings are tied.
      if (model_.tied_embeddings && layout_.stages() == 1) output -= (model_.vocab + layout_.tp - 1) / layout_.tp * model_.hidden;
      bytes += output * kBf16;
    }
    stage_weights_.push_back(bytes);
  }
}

std::int64_t ServingStepModel::kv_bytes_per_token(int stage) const {
  return layout_.stage_layers[static_cast<std::size_t>(stage)] * kv_layer_bytes_;
}

std::int64_t ServingStepModel::workspace_bytes(int stage, int tokens, int sequences) const {
  const std::int64_t t = layout_.tp;
  const std::int64_t h = model_.hidden;
  const std::int64_t gated = model_.mlp == MlpKind::kSwiglu ? 2 : 1;
  // The widest layer's tensors alive at once: its input and residual, the
  // QKV projection, and the MLP's up projection (a mixture of experts' over
  // every routed copy of a token).
  const std::int64_t qkv = (model_.heads + 2LL * model_.kv_heads) * model_.head_dim / t;
  const std::int64_t dense_up = gated * model_.ffn / t;
  const std::int64_t expert_up =
      model_.moe.enabled() ? gated * model_.moe.expert_ffn / t * (model_.moe.top_k + model_.moe.shared_experts) : 0;
  std::int64_t bytes = tokens * kBf16 * (2 * h + std::max({qkv, dense_up, expert_up}));
  if (stage == layout_.stages() - 1) bytes += sequences * kFp32 * ((model_.vocab + t - 1) / t);
  return bytes;
}

const ServingStepModel::TokenCosts& ServingStepModel::at_tokens(int tokens) const {
  if (tokens < 1) throw std::logic_error("a serving step runs at least one token");
  if (memo_.size() <= static_cast<std::size_t>(tokens)) memo_.resize(static_cast<std::size_t>(tokens) + 1);
  TokenCosts& costs = memo_[static_cast<std::size_t>(tokens)];
  if (!costs.blocks_s.empty()) return costs;
  const TrainingShape shape = forward_shape(tokens, layout_.tp, layout_.fp8_weights);
  const LayerKinds kinds = expand_layer_kinds(model_, shape);
  std::vector<double> kind_s(kinds.kinds.size());
  for (std::size_t k = 0; k < kinds.kinds.size(); ++k) {
    kind_s[k] = pass_terms(serving_forward(kinds.kinds[k], model_, tokens), hardware_, shape).total_s() +
                serving_collectives_s(kinds.kinds[k].forward, hardware_, layout_.tp);
  }
  int position = 0;
  for (int stage = 0; stage < layout_.stages(); ++stage) {
    double seconds = stage == 0 ? kind_s[static_cast<std::size_t>(kinds.kind_at[position++])] : 0;
    for (int i = 0; i < layout_.stage_layers[static_cast<std::size_t>(stage)]; ++i) {
      seconds += kind_s[static_cast<std::size_t>(kinds.kind_at[static_cast<std::size_t>(position++)])];
    }
    costs.blocks_s.push_back(seconds);
  }
  costs.output_s = kind_s[static_cast<std::size_t>(kinds.kind_at.back())];
  return costs;
}

double ServingStepModel::attention_s(int stage, const StepLoad& load) const {
  const GpuSpec& gpu = hardware_.gpu;
  const double heads = std::ceil(static_cast<double>(model_.heads) / layout_.tp);
  const HeadDims prefill = prefill_dims(model_);
  const HeadDims decode = decode_dims(model_);
  const double prefill_flops = 2 * heads * load.prefill_pairs * (prefill.qk + prefill.v);
  const double decode_flops = 2 * heads * load.decode_pairs * (decode.qk + decode.v);
  // Every sequence's cached keys and values read, the new ones written.
  const double bytes = (load.context_tokens + load.tokens) * static_cast<double>(kv_layer_bytes_);
  // Prefill chunks at the fused kernels' efficiency for their size; decode
  // queries at their ceiling: a decode kernel's size is in the cache it
  // streams, and the memory curve charges its fixed cost.
  const double compute =
      (prefill_flops > 0 ? prefill_flops / (gpu.peak_flops_bf16 * gpu.attention.at(prefill_flops)) : 0) +
      (decode_flops > 0 ? decode_flops / (gpu.peak_flops_bf16 * gpu.attention.max_fraction) : 0);
  const double stream = bytes > 0 ? bytes / (gpu.memory_bandwidth * gpu.memory.at(bytes)) : 0;
  return layout_.stage_layers[static_cast<std::size_t>(stage)] * std::max(compute, stream);
}

double ServingStepModel::step_s(int stage, const StepLoad& load) const {
  if (load.tokens <= 0) return 0;
  double seconds = at_tokens(load.tokens).blocks_s[static_cast<std::size_t>(stage)] + attention_s(stage, load);
  if (stage == layout_.stages() - 1 && load.sampled > 0) seconds += at_tokens(load.sampled).output_s;
  return seconds;
}

LinkSpec ServingStepModel::boundary_link(int boundary) const {
  // Stage s holds GPUs first + s t .. first + (s + 1) t - 1; a boundary
  // within one NVLink domain (or node) stays on node_link.
  const long long domain = hardware_.local_gpus();
  const long long last_before = layout_.first_gpu + static_cast<long long>(boundary + 1) * layout_.tp - 1;
  return last_before / domain == (last_before + 1) / domain ? hardware_.node_link : hardware_.network;
}

double ServingStepModel::hop_s(int boundary, const StepLoad& load) const {
  const LinkSpec link = boundary_link(boundary);
  const double bytes = kHopTensors * load.tokens * static_cast<double>(model_.hidden) * kBf16;
  if (link.bandwidth <= 0) throw InputError("hardware: a stage boundary's link has no bandwidth; set it in the hardware file");
  return bytes / link.bandwidth + link.latency_s;
}

double ServingStepModel::return_s(const StepLoad& load) const {
  if (layout_.stages() <= 1) return 0;
  const long long last = layout_.first_gpu + static_cast<long long>(layout_.stages() - 1) * layout_.tp;
  const long long domain = hardware_.local_gpus();
  const LinkSpec& link = last / domain == layout_.first_gpu / domain ? hardware_.node_link : hardware_.network;
  return (link.bandwidth > 0 ? load.sampled * kTokenIdBytes / link.bandwidth : 0) + link.latency_s;
}

}  // namespace pipeplan::models
