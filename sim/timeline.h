// Everything that happened in a replay, for traces and charts.
#pragma once

#include <vector>

#include "sim/memory_observer.h"
#include "sim/observer.h"

namespace pipeplan::sim {

struct Timeline {
  std::vector<ComputeRecord> computes;  // in start order
  std::vector<TransferRecord> transfers;
  std::vector<CommWaitRecord> comm_waits;
  std::vector<std::vector<MemorySample>> memory;  // per rank
};

class TimelineRecorder : public EngineObserver {
 public:
  void on_compute_start(const ComputeRecord& record) override { timeline_.computes.push_back(record); }
  void on_transfer(const TransferRecord& record) override { timeline_.transfers.push_back(record); }
  void on_comm_wait(const CommWaitRecord& record) override { timeline_.comm_waits.push_back(record); }
  Timeline take() { return std::move(timeline_); }

 private:
  Timeline timeline_;
};

}  // namespace pipeplan::sim
