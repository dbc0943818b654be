// What serving a model costs on one pipeline stage: the bytes it holds
// (weights, KV cache per token, the forward's workspace) and the time of one
// forward step over a batch of prefill chunks and decode tokens. A step's
// GEMMs run over all its new tokens, at the slower of their FLOPs and their
// weights streaming from HBM (decode is memory-bound); its attention runs as
// one kernel per layer over the batch, at the slower of its query-key FLOPs
// and the KV cache it reads.
#pragma once

#include <cstdint>
#include <vector>

#include "common/step_load.h"
#include "models/hardware.h"
#include "models/model_config.h"

namespace pipeplan::models {

// How a model is laid out and stored for serving.
struct ServingLayout {
  int tp = 1;
  // Transformer layers of each stage, first to last (the embedding on the
  // first, the final norm and output layer on the last).
  std::vector<int> stage_layers;
  bool fp8_weights = false;  // the blocks' linear layers in FP8; embedding and output in BF16
  int kv_element_bytes = 2;  // BF16 KV cache; 1 for FP8
  long long first_gpu = 0;   // where the pipeline starts: which boundaries leave a node
  int stages() const { return static_cast<int>(stage_layers.size()); }
};

// KV cache bytes one token adds to one transformer layer on one tensor-
// parallel rank: K and V of its kv_heads / t heads (at least one: ranks
// beyond the KV heads hold copies), or with multi-head latent attention the
// compressed latent and the RoPE key, which every rank holds whole.
std::int64_t kv_bytes_per_token_layer(const ModelConfig& model, int tp, int element_bytes);
// Over all layers: what one token of context costs the model on one rank.
std::int64_t kv_bytes_per_token(const ModelConfig& model, int tp, int element_bytes);

// vLLM's split of the transformer layers over p stages: even, the stages
// before the last taking one more each where p does not divide them.
std::vector<int> even_stage_layers(int layers, int stages);

// Step costs of one pipeline, memoized by batch tokens: not thread-safe,
// one per simulation.
class ServingStepModel {
 public:
  // Throws InputError when t does not divide the heads, a stage has no
  // layers, or the layers do not add up to the model's.
  ServingStepModel(const ModelConfig& model, const HardwareConfig& hardware, ServingLayout layout);

  int stages() const { return layout_.stages(); }
  const ServingLayout& layout() const { return layout_; }
  // Another replica of the same pipeline, further on: only the links differ.
  void set_first_gpu(long long gpu) { layout_.first_gpu = gpu; }
  // One forward step of `load` on stage `stage`, its TP collectives included.
  double step_s(int stage, const StepLoad& load) const;
  // The hidden states and residual of the step's tokens to the next stage.
  double hop_s(int boundary, const StepLoad& load) const;
  // The sampled token ids from the last stage back to the first (0 with one stage).
  double return_s(const StepLoad& load) const;

  // Per GPU of a stage.
  std::int64_t weight_bytes(int stage) const { return stage_weights_[static_cast<std::size_t>(stage)]; }
  std::int64_t kv_bytes_per_token(int stage) const;
  // The largest forward's transient tensors: `tokens` new tokens through its
  // widest layer, and fp32 logits of `sequences` (last stage).
  std::int64_t workspace_bytes(int stage, int tokens, int sequences) const;

 private:
  struct TokenCosts {  // by stage, at one token count
    std::vector<double> blocks_s;  // GEMMs, elementwise, TP collectives of the stage's layers
    double output_s = 0;           // the output layer over this many sampled sequences
  };
  const TokenCosts& at_tokens(int tokens) const;
  double attention_s(int stage, const StepLoad& load) const;
  LinkSpec boundary_link(int boundary) const;

  ModelConfig model_;
  HardwareConfig hardware_;
  ServingLayout layout_;
  std::vector<std::int64_t> stage_weights_;
  std::int64_t kv_layer_bytes_ = 0;
  mutable std::vector<TokenCosts> memo_;  // index: tokens; empty blocks_s until computed
};

}  // namespace pipeplan::models
