#include "sim/usage_observer.h"

#include <algorithm>

namespace pipeplan::sim {

void UsageObserver::on_compute_end(const ComputeRecord& record) {
  RankUsage& usage = ranks_[static_cast<std::size_t>(record.rank)];
  usage.busy_s += record.end_s - record.start_s;
  usage.first_start_s = std::min(usage.first_start_s, record.start_s);
  usage.last_end_s = std::max(usage.last_end_s, record.end_s);
  ++usage.compute_actions;
  const auto stage = static_cast<std::size_t>(record.action.stage);
  if (stage >= stages_.size()) return;
  StageUsage& stage_usage = stages_[stage];
  if (record.action.kind == OpKind::kForward) {
    stage_usage.first_forward_s = std::min(stage_usage.first_forward_s, record.start_s);
  }
  if (record.action.kind == OpKind::kBackward || record.action.kind == OpKind::kBackwardWeight) {
    stage_usage.grads_ready_s = std::max(stage_usage.grads_ready_s, record.end_s);
  }
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
