#include "sim/memory_observer.h"

#include <algorithm>

namespace pipeplan::sim {

MemoryObserver::MemoryObserver(const PipelineCosts& costs, int ranks, bool record_samples)
    : costs_(costs), record_samples_(record_samples), ranks_(static_cast<std::size_t>(ranks)) {
  if (record_samples_) samples_.resize(static_cast<std::size_t>(ranks));
}

void MemoryObserver::on_compute_start(const ComputeRecord& record) {
  const StageCost& cost = costs_.stages[static_cast<std::size_t>(record.action.stage)];
  if (record.action.kind == OpKind::kForward) {
    change(record.rank, record.start_s, cost.activation_bytes, cost.logits_bytes, 1);
  } else if (record.action.kind == OpKind::kRecompute) {
    change(record.rank, record.start_s, cost.recompute_bytes, 0, 0);
  }
}

void MemoryObserver::on_compute_end(const ComputeRecord& record) {
  const StageCost& cost = costs_.stages[static_cast<std::size_t>(record.action.stage)];
  // What its RECOMPUTE brought back leaves with the backward.
  const std::int64_t recomputed = cost.recompute_apart ? cost.recompute_bytes : 0;
  switch (record.action.kind) {
    case OpKind::kBackward:
      change(record.rank, record.end_s, -cost.activation_bytes - recomputed, -cost.logits_bytes, -1);
      break;
    case OpKind::kBackwardInput:
      change(record.rank, record.end_s, -(cost.activation_bytes - cost.weight_grad_bytes) - recomputed,
             -cost.logits_bytes, -1);
      break;
    case OpKind::kBackwardWeight: change(record.rank, record.end_s, -cost.weight_grad_bytes, 0, 0); break;
    default: break;
  }
}

void MemoryObserver::on_host_copy_issue(const TransferRecord& record) {
  if (record.send.kind != OpKind::kReload) return;
  const StageCost& cost = costs_.stages[static_cast<std::size_t>(record.send.stage)];
  change(record.src_rank, record.issue_s, cost.activation_bytes, cost.logits_bytes, 0);
}

void MemoryObserver::on_transfer(const TransferRecord& record) {
  if (!is_host_copy(record.send.kind)) return;
  const StageCost& cost = costs_.stages[static_cast<std::size_t>(record.send.stage)];
  if (record.send.kind == OpKind::kOffload) {
    change(record.src_rank, record.end_s, -cost.activation_bytes, -cost.logits_bytes, 0, cost.activation_bytes);
  } else {
    change(record.src_rank, record.end_s, 0, 0, 0, -cost.activation_bytes);
  }
}

// The logits leave with the input-gradient pass (the loss backward needs them).
void MemoryObserver::change(int rank, double time_s, std::int64_t delta_bytes, std::int64_t delta_logits,
                            int delta_chunks, std::int64_t delta_host) {
  RankMemory& memory = ranks_[static_cast<std::size_t>(rank)];
  memory.activation_bytes += delta_bytes;
  memory.logits_bytes += delta_logits;
  memory.inflight_chunks += delta_chunks;
  memory.host_bytes += delta_host;
  memory.peak_host_bytes = std::max(memory.peak_host_bytes, memory.host_bytes);
  if (memory.activation_bytes > memory.peak_activation_bytes) {
    memory.peak_activation_bytes = memory.activation_bytes;
    memory.logits_at_peak_bytes = memory.logits_bytes;
  }
  memory.peak_inflight_chunks = std::max(memory.peak_inflight_chunks, memory.inflight_chunks);
  if (record_samples_) {
    samples_[static_cast<std::size_t>(rank)].push_back({time_s, memory.activation_bytes, memory.host_bytes});
  }
}

}  // namespace pipeplan::sim
