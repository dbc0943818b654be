#include "sim/recompute_actions.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

bool recomputes(const PipelineCosts& costs, const Action& action) {
  return produces_input_grad(action.kind) && costs.stages[static_cast<std::size_t>(action.stage)].recompute_s > 0;
}

// Where the RECOMPUTE of the backward at `position` goes: ahead of the
// RECVs just before it and of the forward it is paired with.
std::size_t insertion_point(const std::vector<Action>& actions, std::size_t position) {
  std::size_t at = position;
  while (at > 0) {
    const Action& before = actions[at - 1];
    const bool recv = before.kind == OpKind::kRecvForward || before.kind == OpKind::kRecvBackward;
    const bool paired = before.overlapped && is_compute(before.kind) && at == position;
    if (!recv && !paired) break;
    --at;
  }
  return at;
}

}  // namespace

RecomputeActions add_recompute_actions(const Schedule& schedule, const PipelineCosts& costs) {
  RecomputeActions result{schedule, costs, 0};
  bool any = false;
  for (StageCost& cost : result.costs.stages) {
    if (cost.recompute_s <= 0) continue;
    any = true;
    cost.backward_input_s = std::max(0.0, cost.backward_input_s - cost.recompute_s);
    cost.recompute_apart = true;
  }
  if (!any) {
    throw InputError("no stage recomputes, so there is no recomputation to place in the bubbles: recompute "
                     "(--recompute full or selective, or with given times --tr) or drop --recompute-in-bubbles");
  }
  for (std::size_t rank = 0; rank < schedule.actions.size(); ++rank) {
    const std::vector<Action>& actions = schedule.actions[rank];
    // Per position, whether a RECOMPUTE (and of which backward) goes before it.
    std::vector<std::vector<Action>> before(actions.size() + 1);
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (!recomputes(costs, actions[i])) continue;
      before[insertion_point(actions, i)].push_back({actions[i].stage, actions[i].microbatch, OpKind::kRecompute, false});
      ++result.actions;
    }
    std::vector<Action>& out = result.schedule.actions[rank];
    out.clear();
    // A CSV's idle cells stay before the action they preceded.
    const bool idle = rank < schedule.idle_slots.size() && !schedule.idle_slots[rank].empty();
    std::vector<int> slots;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      for (const Action& recompute : before[i]) {
        out.push_back(recompute);
        if (idle) slots.push_back(0);
      }
      out.push_back(actions[i]);
      if (idle) slots.push_back(schedule.idle_slots[rank][i]);
    }
    if (idle) {
      slots.push_back(schedule.idle_slots[rank].back());
      result.schedule.idle_slots[rank] = std::move(slots);
    }
  }
  return result;
}

}  // namespace pipeplan::sim
