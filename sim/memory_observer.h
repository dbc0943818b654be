// Activation memory over time, with Zero Bubble's accounting: F adds M_B
// when it starts; I frees M_B - M_W, W frees M_W and a full B frees M_B when
// they end. Also counts in-flight chunks (F run, I/B not yet). An offloaded
// micro-batch's M_B leaves the device when its OFFLOAD lands (held on the
// host until its RELOAD lands) and takes device memory again when its
// RELOAD is issued (the copy's destination). A RECOMPUTE adds the bytes
// it brings back when it starts; its backward frees them when it ends.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/costs.h"
#include "sim/observer.h"

namespace pipeplan::sim {

struct MemorySample {
  double time_s;
  std::int64_t activation_bytes;  // on the device
  std::int64_t host_bytes = 0;    // offloaded: what left the device
};

struct RankMemory {
  std::int64_t activation_bytes = 0;
  std::int64_t peak_activation_bytes = 0;
  std::int64_t logits_bytes = 0;
  std::int64_t logits_at_peak_bytes = 0;  // the logits share of the peak
  int inflight_chunks = 0;
  int peak_inflight_chunks = 0;
  std::int64_t host_bytes = 0;  // offloaded activations held in host memory
  std::int64_t peak_host_bytes = 0;
};

class MemoryObserver : public EngineObserver {
 public:
  MemoryObserver(const PipelineCosts& costs, int ranks, bool record_samples);
  void on_compute_start(const ComputeRecord& record) override;
  void on_compute_end(const ComputeRecord& record) override;
  void on_host_copy_issue(const TransferRecord& record) override;
  void on_transfer(const TransferRecord& record) override;

  const std::vector<RankMemory>& ranks() const { return ranks_; }
  // Per rank, every change in time order (empty unless recording).
  std::vector<std::vector<MemorySample>>& samples() { return samples_; }

 private:
  void change(int rank, double time_s, std::int64_t delta_bytes, std::int64_t delta_logits, int delta_chunks,
              std::int64_t delta_host = 0);

  const PipelineCosts& costs_;
  bool record_samples_;
  std::vector<RankMemory> ranks_;
  std::vector<std::vector<MemorySample>> samples_;
};

}  // namespace pipeplan::sim
