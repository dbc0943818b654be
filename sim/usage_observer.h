// Per-rank time accounting from the engine's events: busy compute time and
// the span from a rank's first to its last activity; per stage, when its
// first forward starts and when its weight gradients are final (what
// overlapped data-parallel communication can hide behind).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "sim/observer.h"

namespace pipeplan::sim {

struct RankUsage {
  double busy_s = 0;  // compute only
  double first_start_s = std::numeric_limits<double>::infinity();
  double last_end_s = 0;
  double comm_blocked_s = 0;  // stream held by SEND/RECV (no overlap)
  std::size_t compute_actions = 0;

  bool active() const { return first_start_s <= last_end_s; }
  double span_s() const { return active() ? last_end_s - first_start_s : 0; }
};

struct StageUsage {
  double first_forward_s = std::numeric_limits<double>::infinity();
  double grads_ready_s = 0;  // end of its last backward or weight-gradient pass
};

class UsageObserver : public EngineObserver {
 public:
  UsageObserver(int ranks, int stages)
      : ranks_(static_cast<std::size_t>(ranks)), stages_(static_cast<std::size_t>(stages)) {}
  void on_compute_end(const ComputeRecord& record) override;
  // A blocking SEND keeps the stream working, so it extends the span; a
  // blocking RECV is waiting, so it does not.
  void on_comm_wait(const CommWaitRecord& record) override;
  const std::vector<RankUsage>& ranks() const { return ranks_; }
  const std::vector<StageUsage>& stages() const { return stages_; }

 private:
  std::vector<RankUsage> ranks_;
  std::vector<StageUsage> stages_;
};

}  // namespace pipeplan::sim
