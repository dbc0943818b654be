// Multi-token prediction as Megatron-core runs it (megatron/core/transformer/
// multi_token_prediction.py; DeepSeek-V3 report Sec. 2.2): module k joins the
// previous depth's hidden states with the embedding of the tokens k ahead
// (an RMSNorm on each, concatenated, eh_proj 2h -> h column-parallel and
// gathered), runs one block like the model's last, then its own final norm
// and the shared output head with a cross-entropy of its own. The modules sit
// on the output layer's stage, which keeps a copy of the word embeddings for
// them (synced with the first stage's, as tied embeddings are).
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "models/layer_blocks.h"

namespace pipeplan::models::detail {
namespace {

void append(std::vector<CollectiveWork>& into, const std::vector<CollectiveWork>& more) {
  into.insert(into.end(), more.begin(), more.end());
}

void absorb_pass(PassWork& into, const PassWork& part) {
  into.gemms.insert(into.gemms.end(), part.gemms.begin(), part.gemms.end());
  into.attention.insert(into.attention.end(), part.attention.begin(), part.attention.end());
  into.memory_bytes += part.memory_bytes;
  into.routing_bytes += part.routing_bytes;
  append(into.collectives, part.collectives);
  append(into.shard_collectives, part.shard_collectives);
  append(into.expert_collectives, part.expert_collectives);
}

// The projection joining a depth's hidden states and the shifted tokens'
// embedding, with the embedding lookup and the two norms.
LayerCost projection(const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const double tokens = static_cast<double>(shape.tokens);
  LayerCost part;
  part.params = 2 * norm_params(model, h) + 2 * h * h;
  part.active_params = part.params;
  // eh_proj's output columns over t, and the embedding's copy by vocabulary rows.
  part.params_per_rank = 2 * norm_params(model, h) + 2 * h * shape.split(h) + shape.split(model.vocab) * h;
  const GemmWork eh_proj{tokens, static_cast<double>(shape.split(h)), 2.0 * static_cast<double>(h), 1, 1, shape.fp8};
  part.forward.gemms.push_back(eh_proj);
  part.backward_input.gemms.push_back(eh_proj.input_gradient());
  part.backward_weight.gemms.push_back(eh_proj.weight_gradient());
  // Per token: the embedding gather (read and write a row), two norms (read
  // and write h each), the concatenation (read and write 2h); the backward
  // twice that, and the table's scatter-add for the weights.
  const double whole = shape.per_rank_whole(1.0);
  part.forward.memory_bytes = tokens * e * (2.0 * h + whole * (4.0 * h + 4.0 * h));
  part.backward_input.memory_bytes = 2 * part.forward.memory_bytes;
  part.backward_weight.memory_bytes = tokens * 3.0 * e * h;
  if (shape.tp > 1) {
    // With SP the joined input is gathered before eh_proj; its output
    // columns are gathered after it (then scattered again, without traffic).
    if (shape.sequence_parallel) {
      part.forward.collectives.push_back({CollectiveKind::kAllGather, tokens * 2 * h * e, 1});
    }
    part.forward.collectives.push_back({CollectiveKind::kAllGather, tokens * h * e, 1});
    // The backward's conjugates: each gather's gradient reduce-scattered.
    for (const CollectiveWork& gather : part.forward.collectives) {
      part.backward_input.collectives.push_back({CollectiveKind::kReduceScatter, gather.bytes, gather.count});
    }
  }
  // Stored: both norms' inputs and eh_proj's (with SP its shard, gathered
  // again in the backward), the token ids; until W, eh_proj's input and its
  // output gradient.
  part.activation_bytes = shape.whole(4 * h * e) + 4 * shape.tokens;
  part.weight_grad_bytes = shape.whole(2 * h * e) + e * shape.tokens * shape.split(h);
  return part;
}

}  // namespace

void check_mtp_layers(const ModelConfig& model, const TrainingShape& shape) {
  if (shape.mtp_layers <= 0) return;
  if (model.mtp_layers <= 0) {
    throw InputError(fmt::format("--mtp-layers {}: model '{}' has no multi-token prediction module; drop "
                                 "--mtp-layers (DeepSeek-V3 has one)",
                                 shape.mtp_layers, model.name));
  }
  if (shape.mtp_layers > model.mtp_layers) {
    throw InputError(fmt::format("--mtp-layers {}: model '{}' has {} multi-token prediction module(s); give 1 to {}",
                                 shape.mtp_layers, model.name, model.mtp_layers, model.mtp_layers));
  }
  if (shape.cp != 1) {
    throw InputError(fmt::format("--mtp-layers with --cp {}: Megatron-core runs multi-token prediction without "
                                 "context parallelism; use --cp 1 or drop --mtp-layers",
                                 shape.cp));
  }
}

void absorb(LayerCost& into, const LayerCost& part) {
  into.moe = into.moe || part.moe;
  into.params += part.params;
  into.active_params += part.active_params;
  into.params_per_rank += part.params_per_rank;
  into.expert_params_per_rank += part.expert_params_per_rank;
  into.fp8_params_per_rank += part.fp8_params_per_rank;
  into.fp8_weight_copy_bytes += part.fp8_weight_copy_bytes;
  into.dispatcher_buffer_bytes = std::max(into.dispatcher_buffer_bytes, part.dispatcher_buffer_bytes);
  absorb_pass(into.forward, part.forward);
  absorb_pass(into.backward_input, part.backward_input);
  absorb_pass(into.backward_weight, part.backward_weight);
  absorb_pass(into.recompute, part.recompute);
  into.recompute_flops += part.recompute_flops;
  into.excess_flops += part.excess_flops;
  into.activation_bytes += part.activation_bytes;
  into.weight_grad_bytes += part.weight_grad_bytes;
  into.logits_bytes += part.logits_bytes;
  // Transient within one backward, one part's after another's.
  into.working_bytes = std::max(into.working_bytes, part.working_bytes);
  into.recompute_bytes = std::max(into.recompute_bytes, part.recompute_bytes);
}

void add_mtp_modules(LayerCost& output, const ModelConfig& model, const RankShape& shape, const LayerCost& block,
                     int modules) {
  for (int module = 0; module < modules; ++module) {
    absorb(output, projection(model, shape));
    absorb(output, block);
    // The head's projection is the model's (no parameters of its own), its
    // final norm the module's.
    LayerCost head = output_layer(model, shape);
    head.params = head.active_params = head.params_per_rank = norm_params(model, model.hidden);
    absorb(output, head);
    ++output.mtp_blocks;
  }
}

}  // namespace pipeplan::models::detail
