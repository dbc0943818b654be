// Per-micro-batch state of a layer: what its forward keeps for the
// input-gradient pass (I), what I keeps for the weight-gradient pass (W).
// A pipeline schedule interleaves micro-batches, so each layer keeps one
// entry per micro-batch in flight and checks the pass order of each.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"

namespace pipeplan::profiler {

inline std::int64_t matrix_bytes(const Matrix& matrix) {
  return static_cast<std::int64_t>(matrix.size()) * static_cast<std::int64_t>(sizeof(float));
}

// Drops a matrix's storage (assigning an empty matrix may keep capacity).
inline void free_matrix(Matrix& matrix) { Matrix().swap(matrix); }

// A pass given a matrix of the wrong shape is a caller bug (a schedule
// feeding one layer's output into the wrong layer): it throws.
inline void check_shape(const std::string& layer, const char* what, const Matrix& matrix, Eigen::Index rows,
                        Eigen::Index cols) {
  if (matrix.rows() != rows || matrix.cols() != cols) {
    throw std::invalid_argument(fmt::format("{}: {} is {}x{}, expected {}x{}", layer, what, matrix.rows(),
                                            matrix.cols(), rows, cols));
  }
}

// State must provide `std::int64_t bytes() const`.
template <typename State>
class MicroBatchStates {
 public:
  explicit MicroBatchStates(std::string layer) : layer_(std::move(layer)) {}

  // A second forward of a micro-batch still in flight would silently drop
  // the first one's activations: a schedule bug, so it throws.
  State& begin_forward(int mb) {
    auto [it, inserted] = entries_.try_emplace(mb);
    if (!inserted) fail("forward", mb, "while it is still in flight");
    return it->second.state;
  }
  State& for_input(int mb) {
    Entry& entry = find_entry("backward_input", mb);
    if (entry.input_done) fail("backward_input", mb, "twice");
    entry.input_done = true;
    return entry.state;
  }
  State& for_weight(int mb) {
    Entry& entry = find_entry("backward_weight", mb);
    if (!entry.input_done) fail("backward_weight", mb, "before its backward_input");
    return entry.state;
  }
  void release(int mb) { entries_.erase(mb); }
  std::int64_t bytes(int mb) const {
    const auto it = entries_.find(mb);
    return it == entries_.end() ? 0 : it->second.state.bytes();
  }

 private:
  struct Entry {
    State state;
    bool input_done = false;
  };

  Entry& find_entry(const char* pass, int mb) {
    const auto it = entries_.find(mb);
    if (it == entries_.end()) fail(pass, mb, "without its forward");
    return it->second;
  }
  [[noreturn]] void fail(const char* pass, int mb, const char* why) const {
    throw std::logic_error(fmt::format("{}: {} of micro-batch {} {}", layer_, pass, mb, why));
  }

  std::string layer_;
  std::map<int, Entry> entries_;
};

}  // namespace pipeplan::profiler
