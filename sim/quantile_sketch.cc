#include "sim/quantile_sketch.h"

#include <algorithm>
#include <cmath>

namespace pipeplan::sim {

QuantileSketch::QuantileSketch(double alpha) : log_gamma_(std::log((1 + alpha) / (1 - alpha))) {}

void QuantileSketch::add(double value) {
  value = std::max(value, 0.0);
  least_ = count_ == 0 ? value : std::min(least_, value);
  greatest_ = count_ == 0 ? value : std::max(greatest_, value);
  ++count_;
  sum_ += value;
  if (value > 0) {
    ++buckets_[static_cast<int>(std::ceil(std::log(value) / log_gamma_))];
  } else {
    ++zeros_;
  }
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (other.count_ == 0) return;
  least_ = count_ == 0 ? other.least_ : std::min(least_, other.least_);
  greatest_ = count_ == 0 ? other.greatest_ : std::max(greatest_, other.greatest_);
  count_ += other.count_;
  sum_ += other.sum_;
  zeros_ += other.zeros_;
  for (const auto& [index, samples] : other.buckets_) buckets_[index] += samples;
}

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::int64_t>(std::floor(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_ - 1)));
  if (rank == 0) return least_;
  if (rank == count_ - 1) return greatest_;
  std::int64_t seen = zeros_;
  if (rank < seen) return 0;
  for (const auto& [index, samples] : buckets_) {
    seen += samples;
    if (rank < seen) {
      // The bucket's value of least relative error to both its ends.
      const double gamma = std::exp(log_gamma_);
      const double value = 2 * std::exp(index * log_gamma_) / (gamma + 1);
      return std::clamp(value, least_, greatest_);
    }
  }
  return greatest_;
}

}  // namespace pipeplan::sim
