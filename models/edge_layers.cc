// The first and last layers of the pipeline: the (vocabulary-parallel)
// embedding, and the final norm + output projection + cross-entropy.
#include "models/layer_blocks.h"

namespace pipeplan::models::detail {
namespace {

// One tensor-parallel collective of `payload` bytes that is an all-reduce
// without sequence parallelism and `with_sp` (a lone all-gather or
// reduce-scatter) with it.
void add_edge_collective(PassWork& pass, const RankShape& shape, double payload, CollectiveKind with_sp) {
  if (shape.tp == 1) return;
  pass.collectives.push_back({shape.sequence_parallel ? with_sp : CollectiveKind::kAllReduce, payload, 1});
}

std::int64_t pipeline_payload(const ModelConfig& model, const RankShape& shape) {
  // Megatron scatters the tensor over the tensor-parallel ranks before the
  // send and gathers it after (Narayanan et al. 2021 Sec. 4.1).
  return shape.split(shape.tokens * model.hidden * shape.element);
}

}  // namespace

LayerCost embedding_layer(const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const bool learned = model.position == PositionEmbedding::kLearned;
  LayerCost layer;
  layer.name = "embedding";
  layer.kind = LayerKind::kEmbedding;
  const std::int64_t positions = learned ? std::int64_t{model.context} * h : 0;
  layer.params = model.vocab * h + positions;
  layer.active_params = layer.params;
  // The table is split by vocabulary rows; position embeddings stay whole.
  layer.params_per_rank = shape.split(model.vocab) * h + positions;

  // A gather, no GEMM: read the rows, write the output (each rank writes a
  // whole-size tensor, zero outside its vocabulary slice); add positions;
  // dropout with its mask.
  const double tokens = static_cast<double>(shape.tokens);
  double per_token = 2.0 * e * h + (learned ? 3.0 * e * h : 0) + (model.dropout ? 2.0 * e * h + h : 0);
  layer.forward.memory_bytes = tokens * per_token;
  layer.backward_input.memory_bytes = model.dropout ? tokens * (2.0 * e * h + h) : 0;
  // The table's gradient: a scatter-add of the output gradient (read it,
  // read and write the rows), and the positions' gradient.
  layer.backward_weight.memory_bytes = tokens * (3.0 * e * h + (learned ? 3.0 * e * h : 0));
  const double payload = tokens * h * e;
  // Sums the vocabulary slices (scattered over the sequence with SP); with
  // SP the backward gathers the output gradient back.
  add_edge_collective(layer.forward, shape, payload, CollectiveKind::kReduceScatter);
  if (shape.sequence_parallel) add_edge_collective(layer.backward_input, shape, payload, CollectiveKind::kAllGather);

  // Token ids (int32) for the scatter-add, and the dropout mask.
  layer.activation_bytes = 4 * shape.tokens + (model.dropout ? shape.whole(h) : 0);
  layer.weight_grad_bytes = 4 * shape.tokens;
  layer.output_bytes = pipeline_payload(model, shape);
  return layer;
}

LayerCost output_layer(const ModelConfig& model, const RankShape& shape) {
  const std::int64_t h = model.hidden;
  const std::int64_t e = shape.element;
  const std::int64_t vocab_rank = shape.split(model.vocab);
  LayerCost layer;
  layer.name = "output";
  layer.kind = LayerKind::kLoss;
  // With tied embeddings the last stage holds a copy of the table: it costs
  // memory there but is the same parameters as the embedding's.
  layer.params = norm_params(model, h) + (model.tied_embeddings ? 0 : model.vocab * h);
  layer.active_params = layer.params;
  layer.params_per_rank = norm_params(model, h) + vocab_rank * h;

  const double tokens = static_cast<double>(shape.tokens);
  // Vocabulary-parallel: each rank projects onto its slice of the vocabulary.
  const GemmWork projection{tokens, static_cast<double>(model.vocab) / shape.tp, static_cast<double>(h), 1};
  layer.forward.gemms.push_back(projection);
  layer.backward_input.gemms.push_back(projection.input_gradient());
  layer.backward_weight.gemms.push_back(projection.weight_gradient());
  // Final norm (read + write); cross-entropy: read bf16 logits, write fp32,
  // read them for max and sum of exponentials. Backward about twice that.
  const double forward = tokens * (2.0 * e * h + 10.0 * static_cast<double>(vocab_rank));
  layer.forward.memory_bytes = forward;
  layer.backward_input.memory_bytes = 2 * forward;
  if (shape.tp > 1) {
    // Cross-entropy's all-reduces of per-token max, sum and target logit (fp32).
    layer.forward.collectives.push_back({CollectiveKind::kAllReduce, 4 * tokens, 3});
    // The projection's input: the conjugate of its broadcast (backward
    // all-reduce), or an all-gather forward and reduce-scatter backward.
    const double payload = tokens * h * e;
    if (shape.sequence_parallel) add_edge_collective(layer.forward, shape, payload, CollectiveKind::kAllGather);
    add_edge_collective(layer.backward_input, shape, payload, CollectiveKind::kReduceScatter);
  }

  // Stored: the norm's input, the projection's input and the fp32 logits the
  // cross-entropy backward reads (reference.md: about 4sbV).
  layer.logits_bytes = 4 * shape.tokens * vocab_rank;
  layer.activation_bytes = shape.whole(2 * e * h) + layer.logits_bytes;
  // The softmax gradient, written beside the logits during the backward.
  layer.working_bytes = layer.logits_bytes;
  // W: the projection's input and its output (logit) gradient.
  layer.weight_grad_bytes = shape.whole(e * h) + e * shape.tokens * vocab_rank;
  layer.output_bytes = 0;
  return layer;
}

}  // namespace pipeplan::models::detail
