// The first and last layers of the sequence: the token embedding (plus
// learned positions) and the output layer (final norm, LM head and softmax
// cross-entropy).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/linear.h"
#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cpu/norm.h"
#include "profiler/cpu/random.h"

namespace pipeplan::profiler {

// Input: a column of b s token ids stored as floats (row r is position
// r % s of its sequence). Output: their embedding rows, plus the learned
// position rows when the model has them. There is no input gradient: I
// returns a 0x0 matrix and stashes dy; W scatter-adds it into the tables.
class EmbeddingLayer : public Layer {
 public:
  EmbeddingLayer(const models::ModelConfig& model, int seq_len, Rng& rng);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int mb) override;
  std::vector<Parameter> parameters() override;
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  // Lookups and scatter-adds: no matrix products.
  double forward_flops(int) const override { return 0; }
  double backward_input_flops(int) const override { return 0; }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    Matrix tokens;       // from F, for W
    Matrix grad_output;  // from I, for W
    std::int64_t bytes() const { return matrix_bytes(tokens) + matrix_bytes(grad_output); }
  };

  std::vector<Eigen::Index> token_rows(const Matrix& tokens) const;

  int seq_len_;
  bool learned_positions_;
  Matrix table_;  // vocab x hidden
  Matrix table_grad_;
  Matrix positions_;  // context x hidden (learned positions only)
  Matrix positions_grad_;
  MicroBatchStates<State> states_;
};

// Final norm, LM head and the mean cross-entropy of the micro-batch's
// tokens against targets given by set_targets before the forward. The
// forward returns that mean as a 1x1 matrix; backward_input ignores its
// argument and returns dL/d(hidden) for L = sum over micro-batches of
// loss / microbatches. The softmax (fp32, tokens x vocab) is held from F
// to I; the targets from set_targets to I.
class OutputLayer : public Layer {
 public:
  OutputLayer(const models::ModelConfig& model, int microbatches, Rng& rng);

  void set_targets(int mb, std::vector<int> targets);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int mb) override;
  std::vector<Parameter> parameters() override;
  std::int64_t held_bytes(int mb) const override;
  double forward_flops(int tokens) const override { return head_.forward_flops(tokens); }
  double backward_input_flops(int tokens) const override { return head_.backward_input_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return head_.backward_weight_flops(tokens); }

 private:
  struct State {
    Matrix probs;
    std::vector<int> targets;
    std::int64_t bytes() const {
      return matrix_bytes(probs) + static_cast<std::int64_t>(targets.size() * sizeof(int));
    }
  };

  std::int64_t vocab_;
  int microbatches_;
  std::map<int, std::vector<int>> pending_targets_;  // set, not yet consumed by a forward
  Norm norm_;
  Linear head_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
