#include "sim/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

// Which transfers a compute action implies.
class Crossings {
 public:
  explicit Crossings(const Schedule& schedule) : schedule_(schedule) {}

  bool crosses(int from_stage, int to_stage) const {
    return to_stage >= 0 && to_stage < schedule_.stages && schedule_.rank_of(from_stage) != schedule_.rank_of(to_stage);
  }
  // The RECV a compute action needs first, if its input comes from another rank.
  std::optional<Action> recv_for(const Action& action) const {
    const int s = action.stage;
    if (action.kind == OpKind::kForward && crosses(s, s - 1)) return Action{s, action.microbatch, OpKind::kRecvForward};
    if (produces_input_grad(action.kind) && crosses(s, s + 1)) {
      return Action{s, action.microbatch, OpKind::kRecvBackward};
    }
    return std::nullopt;
  }
  // The SEND after a compute action and the RECV it pairs with.
  std::optional<std::pair<Action, Action>> send_for(const Action& action) const {
    const int s = action.stage;
    if (action.kind == OpKind::kForward && crosses(s, s + 1)) {
      return std::pair{Action{s, action.microbatch, OpKind::kSendForward},
                       Action{s + 1, action.microbatch, OpKind::kRecvForward}};
    }
    if (produces_input_grad(action.kind) && crosses(s, s - 1)) {
      return std::pair{Action{s, action.microbatch, OpKind::kSendBackward},
                       Action{s - 1, action.microbatch, OpKind::kRecvBackward}};
    }
    return std::nullopt;
  }

 private:
  const Schedule& schedule_;
};

// Compute actions a rank takes as one unit: an overlapped pair, else one.
std::size_t unit_size(const std::vector<Action>& actions, std::size_t i) {
  return actions[i].overlapped && i + 1 < actions.size() ? 2 : 1;
}

Schedule lower_before_use(const Schedule& schedule) {
  const Crossings crossings(schedule);
  Schedule lowered = schedule;
  lowered.idle_slots.clear();
  for (std::size_t rank = 0; rank < schedule.actions.size(); ++rank) {
    const auto& source = schedule.actions[rank];
    auto& target = lowered.actions[rank];
    target.clear();
    target.reserve(source.size() * 3);
    for (std::size_t i = 0; i < source.size();) {
      const std::size_t end = i + unit_size(source, i);
      for (std::size_t k = i; k < end; ++k) {
        if (const auto recv = crossings.recv_for(source[k])) target.push_back(*recv);
      }
      for (std::size_t k = i; k < end; ++k) target.push_back(source[k]);
      for (std::size_t k = i; k < end; ++k) {
        if (const auto send = crossings.send_for(source[k])) target.push_back(send->first);
      }
      i = end;
    }
  }
  return lowered;
}

// Whether each (stage, micro-batch, kind) has been taken, for the rounds.
class Taken {
 public:
  explicit Taken(const Schedule& schedule)
      : microbatches_(schedule.microbatches),
        taken_(static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(schedule.microbatches) * kComputeKinds,
               false) {}
  void mark(const Action& action) { taken_[slot(action)] = true; }
  bool has(int stage, int microbatch, OpKind kind) const { return taken_[slot({stage, microbatch, kind})]; }

 private:
  std::size_t slot(const Action& action) const {
    return (static_cast<std::size_t>(action.stage) * static_cast<std::size_t>(microbatches_) +
            static_cast<std::size_t>(action.microbatch)) * kComputeKinds +
           static_cast<std::size_t>(action.kind);
  }
  int microbatches_;
  std::vector<bool> taken_;
};

// A compute action may be taken once what produces its input has been (its
// RECV was then appended, or the producer is on this rank).
bool ready(const Action& action, const Schedule& schedule, const Taken& taken) {
  const int s = action.stage, m = action.microbatch;
  if (action.kind == OpKind::kForward) return s == 0 || taken.has(s - 1, m, OpKind::kForward);
  if (produces_input_grad(action.kind)) {
    return s == schedule.stages - 1 || taken.has(s + 1, m, OpKind::kBackward) ||
           taken.has(s + 1, m, OpKind::kBackwardInput);
  }
  return true;  // W needs only its own I, earlier on this rank
}

Schedule lower_pytorch(const Schedule& schedule) {
  const Crossings crossings(schedule);
  Schedule lowered = schedule;
  lowered.idle_slots.clear();
  for (auto& actions : lowered.actions) actions.clear();
  Taken taken(schedule);
  std::vector<std::size_t> next(schedule.actions.size(), 0);
  // Idle cells still to pass before each rank's next action (a PyTorch
  // compute-only CSV's empty cells); each takes a round, as None does.
  std::vector<int> idle(schedule.actions.size(), 0);
  for (std::size_t rank = 0; rank < idle.size() && !schedule.idle_slots.empty(); ++rank) {
    idle[rank] = schedule.idle_slots[rank].empty() ? 0 : schedule.idle_slots[rank][0];
  }
  std::size_t remaining = schedule.compute_action_count();
  while (remaining > 0) {
    bool progress = false;
    for (std::size_t rank = 0; rank < schedule.actions.size(); ++rank) {
      const auto& source = schedule.actions[rank];
      const std::size_t i = next[rank];
      if (i >= source.size()) continue;
      if (idle[rank] > 0) {
        --idle[rank];
        progress = true;
        continue;
      }
      const std::size_t end = i + unit_size(source, i);
      bool unit_ready = true;
      for (std::size_t k = i; k < end; ++k) unit_ready = unit_ready && ready(source[k], schedule, taken);
      if (!unit_ready) continue;
      for (std::size_t k = i; k < end; ++k) {
        lowered.actions[rank].push_back(source[k]);
        taken.mark(source[k]);
      }
      for (std::size_t k = i; k < end; ++k) {
        if (const auto send = crossings.send_for(source[k])) {
          lowered.actions[rank].push_back(send->first);
          lowered.actions[static_cast<std::size_t>(schedule.rank_of(send->second.stage))].push_back(send->second);
        }
      }
      remaining -= end - i;
      next[rank] = end;
      if (!schedule.idle_slots.empty() && end < source.size()) idle[rank] = schedule.idle_slots[rank][end];
      progress = true;
    }
    if (!progress) {
      throw ScheduleError("the schedule deadlocks: no rank's next action has its input; it cannot be lowered");
    }
  }
  return lowered;
}

}  // namespace

RecvPlacement parse_recv_placement(std::string_view text) {
  if (text == "pytorch") return RecvPlacement::kPyTorch;
  if (text == "before-use") return RecvPlacement::kBeforeUse;
  throw InputError(fmt::format("--recv-placement '{}': use pytorch or before-use", text));
}

Schedule lower_communication(const Schedule& schedule, RecvPlacement placement) {
  if (schedule.has_comm()) return schedule;
  return placement == RecvPlacement::kPyTorch ? lower_pytorch(schedule) : lower_before_use(schedule);
}

Schedule strip_communication(const Schedule& schedule) {
  Schedule stripped = schedule;
  stripped.idle_slots.clear();
  for (auto& rank_actions : stripped.actions) {
    std::erase_if(rank_actions, [](const Action& a) { return is_comm(a.kind); });
  }
  return stripped;
}

}  // namespace pipeplan::sim
