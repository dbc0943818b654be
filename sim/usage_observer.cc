#include "sim/usage_observer.h"

#include <algorithm>

namespace pipeplan::sim {

void UsageObserver::on_compute_end(const ComputeRecord& record) {
  RankUsage& usage = ranks_[static_cast<std::size_t>(record.rank)];
  usage.busy_s += record.end_s - record.start_s;
  usage.first_start_s = std::min(usage.first_start_s, record.start_s);
  usage.last_end_s = std::max(usage.last_end_s, record.end_s);
  ++usage.compute_actions;
}

void UsageObserver::on_comm_wait(const CommWaitRecord& record) {
  RankUsage& usage = ranks_[static_cast<std::size_t>(record.rank)];
  usage.comm_blocked_s += record.end_s - record.start_s;
  const bool sending = record.action.kind == OpKind::kSendForward || record.action.kind == OpKind::kSendBackward;
  if (!sending) return;
  usage.first_start_s = std::min(usage.first_start_s, record.start_s);
  usage.last_end_s = std::max(usage.last_end_s, record.end_s);
}

}  // namespace pipeplan::sim
