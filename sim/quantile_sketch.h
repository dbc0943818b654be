// Quantiles of a stream in bounded memory: values above 0 are counted in
// logarithmic buckets of relative half-width alpha (DDSketch: Masson, Rim
// and Lee, "DDSketch: a fast and fully-mergeable quantile sketch with
// relative-error guarantees", VLDB 2019). Every quantile it returns lies
// within alpha, relatively, of the sample of that rank; the count, sum,
// least and greatest values are exact. Zeros are counted apart.
#pragma once

#include <cstdint>
#include <map>

namespace pipeplan::sim {

class QuantileSketch {
 public:
  explicit QuantileSketch(double alpha = 1e-3);
  // Values below 0 count as 0.
  void add(double value);
  // Another sketch's samples, as if added here (same alpha).
  void merge(const QuantileSketch& other);
  std::int64_t count() const { return count_; }
  double sum() const { return sum_; }
  double least() const { return least_; }
  double greatest() const { return greatest_; }
  // The sample of rank floor(q (count - 1)) in sorted order, within alpha
  // (0 with no samples).
  double quantile(double q) const;
  // Buckets held: about log(greatest / least) / 2 alpha, whatever the count.
  std::size_t buckets() const { return buckets_.size(); }

 private:
  double log_gamma_;  // gamma = (1 + alpha) / (1 - alpha)
  std::map<int, std::int64_t> buckets_;  // bucket i holds (gamma^(i-1), gamma^i]
  std::int64_t zeros_ = 0, count_ = 0;
  double sum_ = 0, least_ = 0, greatest_ = 0;
};

}  // namespace pipeplan::sim
