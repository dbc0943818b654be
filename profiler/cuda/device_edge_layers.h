// The first and last layers on the GPU, as the CPU backend's edge_layers.h:
// the token embedding (plus learned positions) and the output layer (final
// norm, LM head, softmax cross-entropy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "models/model_config.h"
#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cuda/device_layer.h"
#include "profiler/cuda/device_linear.h"
#include "profiler/cuda/device_norm.h"

namespace pipeplan::profiler {

// Input: an fp32 column of b s token ids (row r is position r % s of its
// sequence), as sample_tokens gives them. No input gradient: I returns an
// empty tensor and stashes dy; W scatter-adds it into the tables (fp32
// atomics, so the sums' rounding depends on the order the GPU adds in).
class DeviceEmbedding : public DeviceLayer {
 public:
  DeviceEmbedding(std::shared_ptr<DeviceContext> context, const models::ModelConfig& model, int seq_len);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int mb) override;
  std::vector<DeviceParameter> parameters() override;
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  double forward_flops(int) const override { return 0; }
  double backward_input_flops(int) const override { return 0; }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    DeviceTensor tokens;       // from F, for W
    DeviceTensor grad_output;  // from I, for W
    std::int64_t bytes() const { return tokens.bytes() + grad_output.bytes(); }
  };

  std::shared_ptr<DeviceContext> context_;
  int seq_len_;
  int hidden_;
  DeviceTensor table_;  // vocab x hidden
  DeviceTensor table_grad_;
  DeviceTensor positions_;  // context x hidden (learned positions only)
  DeviceTensor positions_grad_;
  MicroBatchStates<State> states_;
};

// Final norm, LM head (fp32 logits) and the mean cross-entropy of the
// micro-batch's tokens against targets given by set_targets before the
// forward, which returns that mean as a 1x1 fp32 tensor. backward_input
// ignores its argument and returns dL/d(hidden) for L = sum over
// micro-batches of loss / microbatches. The softmax (fp32, tokens x vocab)
// is held from F to I, the targets from set_targets to I; I hands the head
// the bf16 dL/d(logits), which it keeps for W.
class DeviceOutputLayer : public DeviceLayer {
 public:
  DeviceOutputLayer(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model, int microbatches);

  void set_targets(int mb, const std::vector<int>& targets);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int mb) override;
  std::vector<DeviceParameter> parameters() override;
  std::int64_t held_bytes(int mb) const override;
  double forward_flops(int tokens) const override { return head_.forward_flops(tokens); }
  double backward_input_flops(int tokens) const override { return head_.backward_input_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return head_.backward_weight_flops(tokens); }

 private:
  struct State {
    DeviceTensor probs;    // tokens x vocab, fp32
    DeviceTensor targets;  // tokens x 1, int32
    std::int64_t bytes() const { return probs.bytes() + targets.bytes(); }
  };

  std::shared_ptr<DeviceContext> context_;
  std::int64_t vocab_;
  int microbatches_;
  std::map<int, DeviceTensor> pending_targets_;  // set, not yet consumed by a forward
  DeviceNorm norm_;
  DeviceLinear head_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
