#include "sim/lowering.h"

#include <algorithm>

namespace pipeplan::sim {

Schedule lower_communication(const Schedule& schedule) {
  if (schedule.has_comm()) return schedule;
  Schedule lowered = schedule;
  const int last_stage = schedule.stages - 1;
  auto crosses = [&](int from_stage, int to_stage) {
    return to_stage >= 0 && to_stage <= last_stage && schedule.rank_of(from_stage) != schedule.rank_of(to_stage);
  };
  auto add_recvs = [&](const Action& action, std::vector<Action>& target) {
    const int s = action.stage;
    if (action.kind == OpKind::kForward && crosses(s, s - 1)) {
      target.push_back({s, action.microbatch, OpKind::kRecvForward});
    }
    if (produces_input_grad(action.kind) && crosses(s, s + 1)) {
      target.push_back({s, action.microbatch, OpKind::kRecvBackward});
    }
  };
  auto add_sends = [&](const Action& action, std::vector<Action>& target) {
    const int s = action.stage;
    if (action.kind == OpKind::kForward && crosses(s, s + 1)) {
      target.push_back({s, action.microbatch, OpKind::kSendForward});
    }
    if (produces_input_grad(action.kind) && crosses(s, s - 1)) {
      target.push_back({s, action.microbatch, OpKind::kSendBackward});
    }
  };
  for (std::size_t rank = 0; rank < schedule.actions.size(); ++rank) {
    const auto& source = schedule.actions[rank];
    auto& target = lowered.actions[rank];
    target.clear();
    target.reserve(source.size() * 3);
    for (std::size_t i = 0; i < source.size(); ++i) {
      // An overlapped pair receives both inputs first and sends both results after.
      const std::size_t count = source[i].overlapped && i + 1 < source.size() ? 2 : 1;
      for (std::size_t k = i; k < i + count; ++k) add_recvs(source[k], target);
      for (std::size_t k = i; k < i + count; ++k) target.push_back(source[k]);
      for (std::size_t k = i; k < i + count; ++k) add_sends(source[k], target);
      i += count - 1;
    }
  }
  return lowered;
}

Schedule strip_communication(const Schedule& schedule) {
  Schedule stripped = schedule;
  for (auto& rank_actions : stripped.actions) {
    std::erase_if(rank_actions, [](const Action& a) { return is_comm(a.kind); });
  }
  return stripped;
}

}  // namespace pipeplan::sim
