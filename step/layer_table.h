// The per-layer figures the partitioners and the search need, prefix-summed
// so that any contiguous run of layers costs O(1) to evaluate.
#pragma once

#include <cstdint>
#include <vector>

#include "models/hardware.h"
#include "models/layers.h"
#include "models/time_model.h"
#include "models/training_shape.h"

namespace pipeplan::step {

class LayerTable {
 public:
  // Times from the hardware's time model.
  LayerTable(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
             const models::TrainingShape& shape);
  // The same, each distinct layer timed once (what a search tables).
  LayerTable(const models::LayerKinds& layers, const models::HardwareConfig& hardware,
             const models::TrainingShape& shape);
  // Times given per layer (a profile's measurements: kernels only, no pass
  // overhead).
  LayerTable(const models::ModelLayers& layers, const std::vector<models::LayerTimes>& times);

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int layer) const { return names_[static_cast<std::size_t>(layer)]; }

  // Sums over layers [i, j), per micro-batch on one tensor-parallel rank.
  double forward_s(int i, int j) const { return range(forward_, i, j); }
  double backward_input_s(int i, int j) const { return range(backward_input_, i, j); }
  double backward_weight_s(int i, int j) const { return range(backward_weight_, i, j); }
  // Of forward_s and backward_input_s: the experts' token dispatch and
  // combine, which a paired schedule may hide (models::LayerTimes).
  double forward_comm_s(int i, int j) const { return range(forward_comm_, i, j); }
  double backward_input_comm_s(int i, int j) const { return range(backward_input_comm_, i, j); }
  // How long each pass's collectives hold the network port
  // (models::LayerTimes::forward_network_s); 0 with measured times.
  double forward_network_s(int i, int j) const { return range(forward_network_, i, j); }
  double backward_input_network_s(int i, int j) const { return range(backward_input_network_, i, j); }
  double time_s(int i, int j) const { return forward_s(i, j) + backward_input_s(i, j) + backward_weight_s(i, j); }
  // Outside the kernels, per micro-batch: what a stage of layers [i, j)
  // adds to its forward and to its input-gradient pass (the hardware's
  // runtime.pass_overhead once, runtime.layer_overhead per transformer
  // layer; none with a profile's measured times). A weight-gradient pass
  // of its own is queued kernels with nothing to set up: it pays none.
  double forward_overhead_s(int i, int j) const { return pass_overhead_s_ + range(forward_overhead_, i, j); }
  double backward_overhead_s(int i, int j) const { return pass_overhead_s_ + range(backward_overhead_, i, j); }
  double pass_overhead_s() const { return pass_overhead_s_; }
  // Compute slowed per second of communication hidden beside it (the SMs
  // the collectives hold; models::contention_s).
  double hidden_comm_slowdown() const { return hidden_comm_slowdown_; }
  // The network port's rate where the experts' all-to-all crosses nodes,
  // so that the stage-to-stage messages (then across nodes too) share the
  // port with it; 0 where it does not.
  double shared_network_bandwidth() const { return shared_network_bandwidth_; }
  // One micro-batch through a stage of layers [i, j): its kernels and what
  // its passes spend outside them (what the time partitioners balance).
  double stage_time_s(int i, int j) const {
    return time_s(i, j) + forward_overhead_s(i, j) + backward_overhead_s(i, j);
  }
  double params(int i, int j) const { return range(params_, i, j); }
  // Of params: the routed experts' (their own replicas, state and sync).
  double expert_params(int i, int j) const { return range(expert_params_, i, j); }
  // Of params: FP8 linear layers' weights (gathered in FP8 with --fp8-param-gather).
  double fp8_params(int i, int j) const { return range(fp8_params_, i, j); }
  double fp8_weight_copy_bytes(int i, int j) const { return range(fp8_copies_, i, j); }
  // The dispatcher's buffers a rank holding layers [i, j) allocates (once,
  // however many of its layers are MoE).
  double dispatcher_buffer_bytes(int i, int j) const {
    return range(dispatcher_layers_, i, j) > 0 ? dispatcher_buffer_ : 0;
  }
  double activation_bytes(int i, int j) const { return range(activation_, i, j); }
  double weight_grad_bytes(int i, int j) const { return range(weight_grad_, i, j); }
  double logits_bytes(int i, int j) const { return range(logits_, i, j); }
  // Of backward_input_s: the recomputed forward, and the activations it
  // brings back (models::LayerCost::recompute_bytes).
  double recompute_s(int i, int j) const { return range(recompute_, i, j); }
  double recompute_bytes(int i, int j) const { return range(recompute_bytes_, i, j); }
  // Transient working memory: the largest over the run (one layer at a time).
  double working_bytes(int i, int j) const;
  // The transformer blocks (layers 1 .. n - 2) that differ from every
  // block before them in their pass times, communication and overheads:
  // a least over the blocks' passes needs look at these only.
  const std::vector<int>& distinct_blocks() const { return distinct_blocks_; }
  // What crosses the boundary after layer j - 1 (0 after the output layer).
  double boundary_bytes(int j) const { return j > 0 ? output_[static_cast<std::size_t>(j - 1)] : output_.front(); }

 private:
  explicit LayerTable(std::size_t layers);
  void append(const std::string& name, const models::LayerCost& layer, const models::LayerTimes& times,
              const models::LayerOverheads& overheads);
  void finish();  // the range maxima, once every layer is in
  static double range(const std::vector<double>& prefix, int i, int j) {
    return prefix[static_cast<std::size_t>(j)] - prefix[static_cast<std::size_t>(i)];
  }

  std::vector<std::string> names_;
  double pass_overhead_s_ = 0;
  double hidden_comm_slowdown_ = 0;
  double shared_network_bandwidth_ = 0;
  std::vector<double> forward_, backward_input_, backward_weight_;  // prefix sums (size n + 1)
  std::vector<double> forward_comm_, backward_input_comm_;          // prefix sums
  std::vector<double> forward_network_, backward_input_network_;    // prefix sums
  std::vector<double> forward_overhead_, backward_overhead_;        // prefix sums
  std::vector<double> params_, expert_params_, activation_, weight_grad_, logits_;  // prefix sums
  std::vector<double> fp8_params_, fp8_copies_, dispatcher_layers_;                  // prefix sums
  double dispatcher_buffer_ = 0;
  std::vector<double> recompute_, recompute_bytes_;                  // prefix sums
  std::vector<double> output_;                                       // per layer
  std::vector<double> working_;                                      // per layer, until finished
  std::vector<int> distinct_blocks_;
  std::vector<std::vector<double>> working_max_;                     // sparse table: [level][start]
};

}  // namespace pipeplan::step
