// The layers one pipeline rank holds, run as a schedule's actions say: F
// through a stage's layers, I back through them, W for each, and the
// activations and gradients between stages handed over locally or through
// a channel. The logic is the same on every backend; a backend (cpu_backend.h,
// cuda/cuda_backend.h) says what a tensor and a layer are, how layers are
// built and fed, and how tensors travel between ranks. Nothing here knows
// about MPI or NCCL.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "sim/schedule.h"
#include "step/stage_split.h"
#include "validate/cpu_backend.h"
#include "validate/gradient_check.h"

namespace pipeplan::validate {

struct RunRecord {
  sim::Action action;
  double start_s = 0;  // from the iteration's start
  double end_s = 0;
};

struct RunSettings {
  std::uint64_t seed = 1234;
};

// A Backend provides the types Tensor, Layer, Parameter (with name, value
// and gradient pointers), Channel (send / receive / finish_sends between
// ranks) and MemoryProbe, and: build, tokens, set_targets, loss_gradient,
// loss, bytes, host, zero, finish_action and memory_probe (see CpuBackend).
template <class Backend>
class BasicStageRunner {
 public:
  using Tensor = typename Backend::Tensor;
  using Layer = typename Backend::Layer;
  using Parameter = typename Backend::Parameter;
  using Channel = typename Backend::Channel;

  // Builds the layers of every stage `rank` holds (weights from the seed).
  BasicStageRunner(Backend backend, const models::ModelConfig& model, const models::TrainingShape& shape,
                   const sim::Schedule& schedule, const step::StageSplit& split, int rank, const RunSettings& settings);

  // Runs this rank's actions (the lowered schedule's) once; gradients
  // accumulate across calls until zero_gradients(). Returns the records of
  // the compute actions and of blocking receives.
  std::vector<RunRecord> run_iteration(const sim::Schedule& lowered, Channel& channel,
                                       const std::function<double()>& clock);
  void zero_gradients();

  // Summed over micro-batches / m, on the rank with the last stage.
  double loss() const { return loss_; }
  bool holds_loss() const;  // a stage of this rank holds the output layer
  // Every parameter this rank holds, with the global index of its layer.
  std::vector<std::pair<int, Parameter>> parameters();
  // This rank's gradients against the reference's, at the backend's tolerance.
  GradientCheck compare_gradients(ReferenceRun& reference);
  std::int64_t held_bytes() const;  // activations kept right now, and tensors not yet sent
  // The most held_bytes() reached during the last run_iteration (sampled after each action).
  std::int64_t peak_held_bytes() const { return peak_held_; }
  std::int64_t parameter_bytes();  // weights and their gradients
  Backend& backend() { return backend_; }

 private:
  Tensor run_forward(int stage, int mb, Tensor input);
  Tensor run_backward_input(int stage, int mb, Tensor grad);
  void run_backward_weight(int stage, int mb);
  Tensor stage_input(int stage, int mb, int direction);
  void execute(const sim::Action& action, Channel& channel);

  Backend backend_;
  const models::ModelConfig& model_;
  models::TrainingShape shape_;
  const sim::Schedule& schedule_;
  int rank_;
  RunSettings settings_;
  std::map<int, std::vector<std::unique_ptr<Layer>>> stages_;  // stage -> its layers
  std::map<int, int> first_layer_;                             // stage -> global index of its first layer
  std::map<int, bool> holds_output_;                           // stage -> holds the output layer
  std::map<std::int64_t, Tensor> pending_;                     // tensors produced, awaiting their consumer or SEND
  std::vector<Tensor> losses_;                                 // this iteration's, read once it is over
  double loss_ = 0;
  std::int64_t peak_held_ = 0;
};

using StageRunner = BasicStageRunner<CpuBackend>;
extern template class BasicStageRunner<CpuBackend>;

// The direction of a tensor between stages.
inline constexpr int kForwardTensor = 0;   // an activation, to the next stage
inline constexpr int kBackwardTensor = 1;  // a gradient, to the previous stage

// Identifies a tensor between stages: the receiving stage, micro-batch and direction.
std::int64_t tensor_key(int stage, int mb, int direction, int microbatches);

struct TensorId {
  int stage = 0;  // receiving
  int microbatch = 0;
  int direction = kForwardTensor;
};
TensorId tensor_id(std::int64_t key, int microbatches);

}  // namespace pipeplan::validate
