#include "sim/kv_use_trace.h"

#include <algorithm>

namespace pipeplan::sim {

void KvUseTrace::add(double time_s, std::int64_t blocks) {
  if (seen_ == 0) {
    first_s_ = time_s;
  } else {
    block_seconds_ += static_cast<double>(last_blocks_) * (time_s - last_s_);
  }
  last_s_ = time_s;
  last_blocks_ = blocks;
  peak_blocks_ = std::max(peak_blocks_, blocks);
  if (seen_ % stride_ == 0) series_.emplace_back(time_s, blocks);
  ++seen_;
  if (series_.size() >= 2 * kWantedSamples) {
    // Keep every other sample (the batches at multiples of twice the stride).
    std::size_t kept = 0;
    for (std::size_t i = 0; i < series_.size(); i += 2) series_[kept++] = series_[i];
    series_.resize(kept);
    stride_ *= 2;
  }
}

}  // namespace pipeplan::sim
