// The core of causal attention with grouped-query heads on the GPU, as the
// CPU backend's AttentionCore: fused q|k|v in (tokens x (heads + 2 kv_heads)
// head_dim), rotary embeddings on q and k, context out (tokens x heads
// head_dim). The non-flash path: scores q k^T and context p v are batched
// cuBLAS products over the kv heads, with a causal softmax kernel between;
// the probabilities (bf16, b heads s x s) are kept for the backward. No
// weights: W does nothing and I frees everything.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/cpu/attention.h"
#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

class DeviceAttentionCore : public DeviceLayer {
 public:
  DeviceAttentionCore(std::shared_ptr<DeviceContext> context, std::string name, const AttentionShape& shape);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int) override {}
  std::vector<DeviceParameter> parameters() override { return {}; }
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  // As the CPU counts them: q k^T and p v forward, four such products back.
  double forward_flops(int tokens) const override { return 2 * product_flops(tokens); }
  double backward_input_flops(int tokens) const override { return 4 * product_flops(tokens); }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    DeviceTensor qkv;    // q and k rotated, tokens x width
    DeviceTensor probs;  // softmax, (sequences x heads x s) x s
    std::int64_t bytes() const { return qkv.bytes() + probs.bytes(); }
  };
  struct Slice;  // one sequence, one query head per kv head (device_attention.cc)

  double product_flops(int tokens) const {
    return 2.0 * tokens * static_cast<double>(shape_.seq_len) * shape_.heads * shape_.head_dim;
  }
  // The rotary rotation of the q and k columns (rope) or a copy, into bf16.
  DeviceTensor rotate(const void* input, DType dtype, std::int64_t rows, bool inverse) const;
  Slice slice(std::int64_t sequence, std::int64_t offset) const;
  void forward_slice(State& state, const Slice& slice, DeviceTensor& scores, DeviceTensor& context) const;
  void backward_slice(const State& state, const Slice& slice, const DeviceTensor& grad_context,
                      DeviceTensor& grad_probs, DeviceTensor& grad_scores, DeviceTensor& grad_qkv) const;

  std::shared_ptr<DeviceContext> context_;
  std::string name_;
  AttentionShape shape_;
  float scale_;       // 1 / sqrt(head_dim)
  DeviceTensor cos_;  // seq_len x head_dim / 2, fp32 (rope only)
  DeviceTensor sin_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
