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

// `count` identical matrix multiplications of `flops` each (2 m n k). The
// time model applies a size-dependent efficiency per multiplication.
struct GemmWork {
  double flops = 0;
  double count = 0;
};

// Per pass: the matrix work, the bytes elementwise kernels move (norms,
// activations, softmax, dropout, residual adds: read + written) and the
// tensor-parallel collective traffic.
struct PassWork {
  std::vector<GemmWork> gemms;
  double attention_flops = 0;  // fused attention kernels (scores and context)
  double memory_bytes = 0;     // elementwise traffic
  double tp_all_reduce_bytes = 0;       // ring all-reduce payloads (without SP)
  double tp_gather_scatter_bytes = 0;   // all-gather + reduce-scatter payloads (with SP)
  double flops() const {  // gemms + attention
    double total = attention_flops;
    for (const GemmWork& gemm : gemms) total += gemm.flops * gemm.count;
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

  PassWork forward;
  PassWork backward_input;   // input gradients, plus the recomputed forward if any
  PassWork backward_weight;  // weight gradients
  double recompute_flops = 0;  // of backward_input: the recomputed forward

  // Zero Bubble's accounting, per micro-batch on one tensor-parallel rank.
  std::int64_t activation_bytes = 0;   // M_B: kept from F until the input-gradient pass
  std::int64_t weight_grad_bytes = 0;  // M_W: of M_B, kept after it until W
  std::int64_t logits_bytes = 0;       // of M_B: fp32 logits (output layer only)
  std::int64_t working_bytes = 0;      // transient during its backward (recompute, softmax gradient)
  std::int64_t output_bytes = 0;       // sent to the next stage if a boundary follows
};

struct ModelLayers {
  std::vector<LayerCost> layers;  // embedding, blocks..., output
  std::int64_t total_params = 0;
  std::int64_t active_params = 0;
  std::int64_t embedding_params = 0;  // input embedding (+ learned positions)
  int transformer_layers() const { return static_cast<int>(layers.size()) - 2; }
};

// Throws InputError for shapes that cannot run: heads not dividing hidden,
// t not dividing heads or kv heads, non-positive sizes.
ModelLayers expand_layers(const ModelConfig& model, const TrainingShape& shape);

// FLOPs of forward and backward for one micro-batch over the whole model
// (all tensor-parallel ranks): model FLOPs leave recomputation out (what MFU
// counts), hardware FLOPs include it.
double model_flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape);
double hardware_flops_per_microbatch(const ModelLayers& layers, const TrainingShape& shape);

}  // namespace pipeplan::models
