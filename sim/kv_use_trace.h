// A KV cache's use after each batch, in bounded memory: the time-weighted
// sum and the peak over every batch exactly, and for a chart the samples of
// evenly spaced batches, thinned by half whenever they pass twice the
// wanted count (a million batches keep under 1,600 samples).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace pipeplan::sim {

class KvUseTrace {
 public:
  static constexpr std::size_t kWantedSamples = 800;
  // Blocks held from `time_s` until the next sample.
  void add(double time_s, std::int64_t blocks);
  std::int64_t samples_seen() const { return seen_; }
  double first_s() const { return first_s_; }
  double last_s() const { return last_s_; }
  std::int64_t last_blocks() const { return last_blocks_; }
  std::int64_t peak_blocks() const { return peak_blocks_; }
  // Blocks x seconds from the first sample to the last.
  double block_seconds() const { return block_seconds_; }
  // (time, blocks) of every stride-th batch, the first included.
  const std::vector<std::pair<double, std::int64_t>>& series() const { return series_; }

 private:
  std::vector<std::pair<double, std::int64_t>> series_;
  std::int64_t stride_ = 1, seen_ = 0, last_blocks_ = 0, peak_blocks_ = 0;
  double first_s_ = 0, last_s_ = 0, block_seconds_ = 0;
};

}  // namespace pipeplan::sim
