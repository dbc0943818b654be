#include "sim/offload.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

// OFFLOAD right after position `forward`, RELOAD right before `ahead`, for
// each micro-batch of the rank that waits.
struct Copies {
  std::vector<std::vector<Action>> after, before;  // by position in the rank's list
};

Copies place_copies(const std::vector<Action>& actions) {
  Copies copies{std::vector<std::vector<Action>>(actions.size()), std::vector<std::vector<Action>>(actions.size())};
  std::vector<std::size_t> compute;  // positions of the compute actions, in order
  std::map<std::pair<int, int>, std::size_t> forward_at;  // (stage, micro-batch) -> index into `compute`
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const Action& action = actions[i];
    if (!is_compute(action.kind)) continue;
    const std::size_t index = compute.size();
    compute.push_back(i);
    const std::pair<int, int> key{action.stage, action.microbatch};
    if (action.kind == OpKind::kForward) {
      forward_at[key] = index;
      continue;
    }
    if (!produces_input_grad(action.kind)) continue;
    const auto found = forward_at.find(key);
    // Its backward right after its forward: nothing waits.
    if (found == forward_at.end() || index < found->second + 2) continue;
    copies.after[compute[found->second]].push_back({action.stage, action.microbatch, OpKind::kOffload, false});
    copies.before[compute[index - 1]].push_back({action.stage, action.microbatch, OpKind::kReload, false});
  }
  return copies;
}

}  // namespace

Schedule add_host_copies(const Schedule& lowered) {
  for (const std::vector<Action>& actions : lowered.actions) {
    if (std::any_of(actions.begin(), actions.end(), [](const Action& a) { return a.overlapped; })) {
      throw InputError(fmt::format("activation offload with {}'s overlapped forward-and-backward pairs is not built: "
                                   "a copy cannot split a pair",
                                   lowered.name));
    }
  }
  Schedule result = lowered;
  for (std::size_t rank = 0; rank < lowered.actions.size(); ++rank) {
    const std::vector<Action>& actions = lowered.actions[rank];
    const Copies copies = place_copies(actions);
    std::vector<Action>& out = result.actions[rank];
    out.clear();
    for (std::size_t i = 0; i < actions.size(); ++i) {
      out.insert(out.end(), copies.before[i].begin(), copies.before[i].end());
      out.push_back(actions[i]);
      out.insert(out.end(), copies.after[i].begin(), copies.after[i].end());
    }
  }
  return result;
}

}  // namespace pipeplan::sim
