// What the engine reports while it runs. Statistics, memory tracking and
// timeline recording are observers; the engine loop knows none of them.
#pragma once

#include <cstdint>

#include "sim/action.h"

namespace pipeplan::sim {

struct ComputeRecord {
  int rank = 0;
  Action action;
  double start_s = 0;
  double end_s = 0;
  // Communication inside the action (a mixture of experts' all-to-all), and
  // of it what its overlapped pair hid beside the other pass's compute.
  double comm_s = 0;
  double hidden_comm_s = 0;
};

struct TransferRecord {
  int link = 0;        // dense id of the link resource
  int src_rank = 0;
  int dst_rank = 0;
  Action send;         // the SEND action that issued it
  std::int64_t bytes = 0;
  double issue_s = 0;  // when the sender issued it
  double start_s = 0;  // when the link took it (after queued transfers)
  double end_s = 0;    // arrival (a host copy's src and dst are its rank)
};

// Time a rank's stream spends blocked in a SEND or RECV (only without
// compute/communication overlap).
struct CommWaitRecord {
  int rank = 0;
  Action action;
  double start_s = 0;
  double end_s = 0;
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // Called when a compute action starts; its end time is already known.
  virtual void on_compute_start(const ComputeRecord&) {}
  virtual void on_compute_end(const ComputeRecord&) {}
  virtual void on_transfer(const TransferRecord&) {}
  // An OFFLOAD or RELOAD put on the rank's host link (src and dst the
  // rank; end_s not yet known); on_transfer follows when it lands.
  virtual void on_host_copy_issue(const TransferRecord&) {}
  virtual void on_comm_wait(const CommWaitRecord&) {}
};

}  // namespace pipeplan::sim
