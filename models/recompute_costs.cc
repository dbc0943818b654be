// Selective and full recomputation's costs for one transformer block:
// what it keeps for the backward (M_B, M_W, transient bytes) and what the
// backward runs again, as Megatron-core's recompute modules drop and redo it.
#include <algorithm>

#include "models/layer_blocks.h"

namespace pipeplan::models::detail {
namespace {

// The bytes of one micro-batch that the selective `modules` drop from what a
// block stores for its backward (they live during the backward only).
std::int64_t dropped_bytes(const BlockCost& attention, const BlockCost& mlp, const RankShape& shape, unsigned modules) {
  std::int64_t dropped = 0;
  if ((modules & kCoreAttention) != 0) dropped += attention.stored_scores;
  if ((modules & kLayerNorm) != 0) dropped += shape.whole(attention.norm_output_whole + mlp.norm_output_whole);
  if ((modules & kMlaUpProj) != 0) dropped += shape.tokens * attention.up_proj_split;
  const unsigned whole_module = mlp.routed ? kMoe : kMlp;
  if ((modules & whole_module) != 0) return dropped + shape.whole(mlp.module_whole) + shape.tokens * mlp.module_split;
  if (!mlp.routed) return dropped;
  if ((modules & kMoeActivation) != 0) dropped += shape.tokens * mlp.activation_split;
  if ((modules & kSharedExperts) != 0) dropped += shape.tokens * mlp.shared_split;
  return dropped;
}

// The MLP half's selective recomputation: a whole module (mlp, moe) with
// its GEMMs, elementwise bytes and collectives, else the shared experts and
// the routed experts' activation as named.
void add_module_recompute(LayerCost& layer, const BlockCost& mlp, const ModelConfig& model, const RankShape& shape,
                          unsigned modules) {
  PassWork& redo = layer.recompute;
  const double tokens = static_cast<double>(shape.tokens);
  const auto rerun = [&](std::size_t first_gemm, double calls) {
    for (std::size_t g = first_gemm; g < mlp.gemms.size(); ++g) {
      redo.gemms.push_back(mlp.gemms[g]);
      layer.recompute_flops += mlp.gemms[g].flops() * mlp.gemms[g].count;
    }
    const std::vector<CollectiveWork> calls_made = tensor_parallel_collectives(model, shape, calls);
    redo.collectives.insert(redo.collectives.end(), calls_made.begin(), calls_made.end());
  };
  if ((modules & (mlp.routed ? kMoe : kMlp)) != 0) {
    rerun(0, mlp.tp_collectives);
    redo.memory_bytes += tokens * (shape.per_rank_whole(mlp.module_traffic_whole) + mlp.module_traffic_split);
    redo.routing_bytes += tokens * shape.per_rank_whole(mlp.routing_traffic_whole);
    redo.expert_collectives.insert(redo.expert_collectives.end(), mlp.expert_collectives.begin(),
                                   mlp.expert_collectives.end());
    return;
  }
  if (!mlp.routed) return;
  if ((modules & kSharedExperts) != 0 && mlp.shared_gemms > 0) {
    rerun(mlp.gemms.size() - mlp.shared_gemms, mlp.tp_collectives);
    redo.memory_bytes += tokens * mlp.shared_traffic_split;
  }
  if ((modules & kMoeActivation) != 0) redo.memory_bytes += tokens * mlp.activation_traffic_split;
}

}  // namespace

// M_B, M_W and the transient bytes of one block under `recompute`.
void set_memory(LayerCost& layer, const BlockCost& attention, const BlockCost& mlp, const RankShape& shape,
                Recompute recompute, unsigned modules, std::int64_t hidden) {
  const std::int64_t tokens = shape.tokens;
  const std::int64_t scores = attention.stored_scores;
  const std::int64_t all = shape.whole(attention.stored_whole + mlp.stored_whole) +
                           tokens * (attention.stored_split + mlp.stored_split) + scores;
  if (recompute == Recompute::kNone) {
    layer.activation_bytes = all;
  } else if (recompute == Recompute::kSelective) {
    // The recomputed modules' tensors (the attention core's scores by
    // default) live only during B.
    const std::int64_t dropped = dropped_bytes(attention, mlp, shape, modules);
    layer.activation_bytes = all - dropped;
    layer.working_bytes = dropped;
  } else {
    // Only the block's input is kept; B re-materialises everything.
    layer.activation_bytes = shape.whole(hidden * shape.element);
    layer.working_bytes = all;
  }
  layer.recompute_bytes = std::max<std::int64_t>(0, all - layer.activation_bytes);
  const std::int64_t wgrad = shape.whole(attention.wgrad_whole + mlp.wgrad_whole) +
                             tokens * (attention.wgrad_split + mlp.wgrad_split);
  // The simulator frees M_W out of M_B, so M_W <= M_B. Only full recompute
  // breaks it (W's inputs come from the recomputed forward); the excess is
  // charged to the transient bytes of the backward instead.
  layer.weight_grad_bytes = std::min(wgrad, layer.activation_bytes);
  layer.working_bytes += wgrad - layer.weight_grad_bytes;
}

// Adds the recomputed forward to the input-gradient pass.
void add_recompute(LayerCost& layer, const BlockCost& attention, const BlockCost& mlp, const ModelConfig& model,
                   const RankShape& shape, Recompute recompute, unsigned modules) {
  PassWork& redo = layer.recompute;
  const PassWork& forward = layer.forward;
  if (recompute == Recompute::kSelective) {
    const double tokens = static_cast<double>(shape.tokens);
    if ((modules & kCoreAttention) != 0) {
      redo.attention = forward.attention;
      redo.memory_bytes += attention.traffic_scores;
      layer.recompute_flops = forward.attention_flops();
    }
    if ((modules & kLayerNorm) != 0) {
      const double norms = attention.norm_traffic_whole + mlp.norm_traffic_whole;
      redo.memory_bytes += tokens * (shape.sequence_parallel ? norms / shape.tp : norms);
    }
    if ((modules & kMlaUpProj) != 0) {
      for (const GemmWork& gemm : attention.up_proj_gemms) {
        redo.gemms.push_back(gemm);
        layer.recompute_flops += gemm.flops() * gemm.count;
      }
      redo.memory_bytes += tokens * attention.up_proj_traffic_split;
    }
    add_module_recompute(layer, mlp, model, shape, modules);
  } else if (recompute == Recompute::kFull) {
    redo = forward;
    redo.shard_collectives.clear();  // the gathered weights are still there
    layer.recompute_flops = forward.flops();
  }
  PassWork& backward = layer.backward_input;
  backward.gemms.insert(backward.gemms.end(), redo.gemms.begin(), redo.gemms.end());
  backward.attention.insert(backward.attention.end(), redo.attention.begin(), redo.attention.end());
  backward.memory_bytes += redo.memory_bytes;
  backward.routing_bytes += redo.routing_bytes;
  backward.collectives.insert(backward.collectives.end(), redo.collectives.begin(), redo.collectives.end());
  backward.expert_collectives.insert(backward.expert_collectives.end(), redo.expert_collectives.begin(),
                                     redo.expert_collectives.end());
}

}  // namespace pipeplan::models::detail
