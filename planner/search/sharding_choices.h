// The data-parallel shardings (ZeRO stages) a plan search tries for a
// group: the request's, or for each framework it keeps to or tracks
// (step/framework_support.h) the shardings that framework runs, less those
// ZeRO-1 dominates where the framework has ZeRO-1.
#pragma once

#include <vector>

#include "models/job_layout.h"
#include "planner/plan.h"
#include "planner/search/search_space.h"
#include "step/framework_support.h"

namespace pipeplan::planner {

// Empty where a fixed sharding has no replicas to shard over (or ZeRO-2/3
// meets experts folded apart).
std::vector<models::ZeroStage> zero_choices(const PlanRequest& request, const SearchGroup& group);

// Whether zero_choices tried `zero` only for a framework that lacks ZeRO-1:
// it may be that framework's best, never the top's or the front's.
bool dominated_sharding(const PlanRequest& request, const SearchGroup& group, models::ZeroStage zero);

// The frameworks that run no ZeRO-1 at the group's degrees.
step::FrameworkSet frameworks_without_zero1(const SearchGroup& group);

}  // namespace pipeplan::planner
