// The core of causal multi-head attention with grouped-query heads: takes
// the fused q|k|v projection (tokens x (heads + 2 kv_heads) head_dim),
// applies rotary embeddings to q and k if asked, and returns the context
// (tokens x heads head_dim). This is the non-flash path: the softmax
// probabilities are stored for the backward, (b heads s) x s of them.
// No weights, so its weight-gradient pass does nothing and I frees all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/micro_batch_state.h"

namespace pipeplan::profiler {

struct AttentionShape {
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int seq_len = 0;
  bool rope = false;
  int width() const { return (heads + 2 * kv_heads) * head_dim; }
};

class AttentionCore : public Layer {
 public:
  AttentionCore(std::string name, const AttentionShape& shape);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int) override {}
  std::vector<Parameter> parameters() override { return {}; }
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  // Scores q k^T and context p v: 2 s^2 d each per sequence and head; the
  // input gradient has four such products (dp, dv, dq, dk).
  double forward_flops(int tokens) const override { return 2 * product_flops(tokens); }
  double backward_input_flops(int tokens) const override { return 4 * product_flops(tokens); }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    Matrix qkv;    // q and k rotated, tokens x width
    Matrix probs;  // softmax, (sequences x heads x s) x s
    std::int64_t bytes() const { return matrix_bytes(qkv) + matrix_bytes(probs); }
  };

  double product_flops(int tokens) const {
    return 2.0 * tokens * static_cast<double>(shape_.seq_len) * shape_.heads * shape_.head_dim;
  }
  // Rotates each q and k head's pairs (i, i + head_dim / 2) by the
  // position's angles; `inverse` rotates back (the rotation's transpose),
  // which is what the gradient goes through.
  void rotate(Matrix& qkv, bool inverse) const;
  // Adds one (sequence, head) pair's dq, dk, dv into grad_qkv.
  void backward_head(const State& state, const Matrix& grad_context, int sequence, int head,
                     Matrix& grad_qkv) const;

  std::string name_;
  AttentionShape shape_;
  Matrix cos_;  // seq_len x head_dim / 2 (rope only)
  Matrix sin_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
