// A model layer that runs for real on the CPU (Eigen, fp32), with the
// backward split as Zero Bubble splits it: the input-gradient pass (I)
// returns the gradient for the previous layer and keeps what the
// weight-gradient pass (W) needs; W then accumulates parameter gradients.
// Every pass is keyed by micro-batch, so a pipeline schedule can hold many
// micro-batches in flight and run their passes in any valid order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace pipeplan::profiler {

// Activations: one row per token (b x s rows), one column per feature.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A parameter and its accumulated gradient, for checks and optimizers.
struct Parameter {
  std::string name;
  Matrix* value;
  Matrix* gradient;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // Runs the forward pass of micro-batch `mb` and keeps what its backward needs.
  virtual Matrix forward(int mb, const Matrix& input) = 0;
  // Input-gradient pass: takes dL/d(output), returns dL/d(input); frees what
  // only it needed and keeps what W needs.
  virtual Matrix backward_input(int mb, const Matrix& grad_output) = 0;
  // Weight-gradient pass: adds mb's parameter gradients and frees the rest.
  virtual void backward_weight(int mb) = 0;
  virtual std::vector<Parameter> parameters() = 0;
  // Bytes currently kept for micro-batch mb (activations, stashed inputs).
  virtual std::int64_t held_bytes(int mb) const = 0;
  // FLOPs of each pass for a micro-batch of `tokens` rows (matrix products).
  virtual double forward_flops(int tokens) const = 0;
  virtual double backward_input_flops(int tokens) const = 0;
  virtual double backward_weight_flops(int tokens) const = 0;
};

}  // namespace pipeplan::profiler
