#include "sim/pytorch_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

constexpr std::size_t kKinds = 8;

class Replay {
 public:
  explicit Replay(const Schedule& lowered)
      : schedule_(lowered),
        taken_(static_cast<std::size_t>(lowered.stages) * static_cast<std::size_t>(lowered.microbatches) * kKinds,
               false),
        next_(lowered.actions.size(), 0),
        steps_(lowered.actions.size(), 0) {}

  int run() {
    while (!done()) {
      std::vector<bool> idle(next_.size(), false);
      bool progress = false;
      for (std::size_t rank = 0; rank < next_.size(); ++rank) {
        if (finished(rank)) continue;
        ++steps_[rank];
        if (take_if_ready(rank)) {
          progress = true;
        } else {
          idle[rank] = true;
        }
      }
      // What a higher rank took this step can unblock a lower one.
      for (std::size_t rank = 0; rank < next_.size(); ++rank) {
        if (idle[rank] && !finished(rank)) take_if_ready(rank);
      }
      if (!progress) throw ScheduleError("the schedule deadlocks: in PyTorch's unit-step replay no rank can move");
    }
    return steps_.empty() ? 0 : *std::max_element(steps_.begin(), steps_.end());
  }

 private:
  bool finished(std::size_t rank) const { return next_[rank] >= schedule_.actions[rank].size(); }
  bool done() const {
    for (std::size_t rank = 0; rank < next_.size(); ++rank) {
      if (!finished(rank)) return false;
    }
    return true;
  }

  std::size_t unit_end(std::size_t rank) const {
    const auto& actions = schedule_.actions[rank];
    const std::size_t i = next_[rank];
    return actions[i].overlapped && i + 1 < actions.size() && is_compute(actions[i + 1].kind) ? i + 2 : i + 1;
  }

  bool take_if_ready(std::size_t rank) {
    const auto& actions = schedule_.actions[rank];
    const std::size_t end = unit_end(rank);
    for (std::size_t k = next_[rank]; k < end; ++k) {
      if (!ready(actions[k])) return false;
    }
    for (std::size_t k = next_[rank]; k < end; ++k) taken_[slot(actions[k].stage, actions[k].microbatch, actions[k].kind)] = true;
    next_[rank] = end;
    return true;
  }

  bool has(int stage, int microbatch, OpKind kind) const { return taken_[slot(stage, microbatch, kind)]; }
  bool same_rank(int a, int b) const { return schedule_.rank_of(a) == schedule_.rank_of(b); }

  // PyTorch's _ready_to_schedule, the neighbour stages looked up on the
  // action's own rank.
  bool ready(const Action& action) const {
    const int s = action.stage, m = action.microbatch;
    const int last = schedule_.stages - 1;
    switch (action.kind) {
      case OpKind::kForward:
        return s == 0 || has(s, m, OpKind::kRecvForward) || (same_rank(s - 1, s) && has(s - 1, m, OpKind::kForward));
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
        return s == last || has(s, m, OpKind::kRecvBackward) ||
               (same_rank(s + 1, s) && (has(s + 1, m, OpKind::kBackwardInput) || has(s + 1, m, OpKind::kBackward)));
      case OpKind::kBackwardWeight:
      case OpKind::kRecompute: return true;  // needs only its own forward, on this rank
      case OpKind::kSendForward: return has(s, m, OpKind::kForward);
      case OpKind::kSendBackward: return has(s, m, OpKind::kBackwardInput) || has(s, m, OpKind::kBackward);
      case OpKind::kRecvForward: return s > 0 && has(s - 1, m, OpKind::kSendForward);
      case OpKind::kRecvBackward: return s < last && has(s + 1, m, OpKind::kSendBackward);
      case OpKind::kOffload:
      case OpKind::kReload: return false;  // not PyTorch's actions: never in its CSVs
    }
    return false;
  }

  std::size_t slot(int stage, int microbatch, OpKind kind) const {
    return (static_cast<std::size_t>(stage) * static_cast<std::size_t>(schedule_.microbatches) +
            static_cast<std::size_t>(microbatch)) * kKinds +
           static_cast<std::size_t>(kind);
  }

  const Schedule& schedule_;
  std::vector<bool> taken_;
  std::vector<std::size_t> next_;
  std::vector<int> steps_;
};

}  // namespace

int pytorch_step_count(const Schedule& lowered) { return Replay(lowered).run(); }

}  // namespace pipeplan::sim
