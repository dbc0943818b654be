// A small deterministic generator for weights and sample tokens. It is
// written out here rather than taken from <random> because the standard
// distributions are implementation-defined: two processes (or two standard
// libraries) must draw bit-identical weights for the same layer.
#pragma once

#include <cstdint>

#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"

namespace pipeplan::profiler {

// splitmix64 (Steele, Lea and Flood 2014): one 64-bit state, full period.
class Rng {
 public:
  // Streams differ by `stream` (a layer index, a micro-batch) for one seed.
  Rng(std::uint64_t seed, std::uint64_t stream) : state_(mix(seed) ^ mix(stream + 0x632be59bd9b4e019ULL)) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(state_);
  }
  // Uniform in [-1, 1): the top 24 bits, so every value is exact in fp32.
  float symmetric() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }
  // Uniform in [0, bound); the modulo bias is below 1e-12 for any vocabulary.
  std::int64_t below(std::int64_t bound) {
    return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(bound));
  }
  // Fills `matrix` row by row with symmetric() * scale.
  void fill(Matrix& matrix, float scale) {
    for (Eigen::Index row = 0; row < matrix.rows(); ++row) {
      for (Eigen::Index col = 0; col < matrix.cols(); ++col) matrix(row, col) = symmetric() * scale;
    }
  }

 private:
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::uint64_t state_;
};

// Small uniform weights, in the spirit of the usual N(0, 0.02) initialisation.
inline constexpr float kInitScale = 0.02f;

}  // namespace pipeplan::profiler
