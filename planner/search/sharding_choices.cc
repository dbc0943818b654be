#include "planner/search/sharding_choices.h"

#include <algorithm>
#include <tuple>

namespace pipeplan::planner {
namespace {

// The group's parallel degrees as a layout (what the shardings a framework
// runs depend on).
models::JobLayout group_degrees(const SearchGroup& group) {
  models::JobLayout degrees;
  std::tie(degrees.tp, degrees.cp, degrees.pp, degrees.dp, degrees.ep) =
      std::tie(group.tp, group.cp, group.pp, group.dp, group.ep);
  return degrees;
}

}  // namespace

// The optimizer and gradient sharding a group can use over its d x c
// weight replicas: the request's, or for each framework the search keeps
// to or tracks (step/framework_support.h) the shardings it runs. No
// sharding is left out unless asked for or dominated, as exactly as a
// bound: against ZeRO-1 it holds more state and syncs no faster (an
// all-reduce moves what a reduce-scatter and an all-gather do, and the
// optimizer steps the whole model), so a framework that runs ZeRO-1 needs
// neither no sharding nor, pipelined, ZeRO-2/3 (which sync once per step
// as ZeRO-1 does and hold more).
std::vector<models::ZeroStage> zero_choices(const PlanRequest& request, const SearchGroup& group) {
  // A fixed sharding fixes the axis: it needs replicas to shard over.
  // ZeRO-2/3 shard over the dense weights' replicas; experts folded apart
  // from the attention's t (ep x etp != t) have replicas of their own.
  const bool experts_apart = group.ep * (group.etp > 0 ? group.etp : group.tp) != group.tp;
  if (request.zero) {
    const bool shards = *request.zero != models::ZeroStage::kNone;
    if (shards && group.dp * group.cp <= 1) return {};
    if (experts_apart && *request.zero >= models::ZeroStage::kGradients) return {};
    return {*request.zero};
  }
  if (group.dp * group.cp <= 1) return {models::ZeroStage::kNone};
  // Measured passes lack ZeRO-2/3's per-micro-batch collectives.
  const bool gradients_sharded = !request.profile && !experts_apart;
  const models::JobLayout degrees = group_degrees(group);
  std::vector<models::ZeroStage> choices;
  for (step::Framework framework : searched_frameworks(request)) {
    const std::vector<models::ZeroStage> runs = step::zero_stages_run(framework, degrees);
    const bool runs_zero1 = std::find(runs.begin(), runs.end(), models::ZeroStage::kOptimizer) != runs.end();
    for (models::ZeroStage zero : runs) {
      const bool sharded = zero >= models::ZeroStage::kGradients;
      const bool dominated = runs_zero1 && (zero == models::ZeroStage::kNone || (sharded && group.pp > 1));
      if (!dominated && (!sharded || gradients_sharded)) choices.push_back(zero);
    }
  }
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  return choices;
}

bool dominated_sharding(const PlanRequest& request, const SearchGroup& group, models::ZeroStage zero) {
  if (request.zero || request.framework != step::Framework::kAny || group.dp * group.cp <= 1) return false;
  return zero == models::ZeroStage::kNone || (zero >= models::ZeroStage::kGradients && group.pp > 1);
}


step::FrameworkSet frameworks_without_zero1(const SearchGroup& group) {
  step::FrameworkSet without = 0;
  for (const step::FrameworkInfo& info : step::frameworks()) {
    const std::vector<models::ZeroStage> runs = step::zero_stages_run(info.id, group_degrees(group));
    if (std::find(runs.begin(), runs.end(), models::ZeroStage::kOptimizer) == runs.end()) {
      without |= step::framework_bit(info.id);
    }
  }
  return without;
}

}  // namespace pipeplan::planner
