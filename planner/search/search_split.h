// How the plan search splits a candidate's layers into stages: the
// request's split, or the partitioner it names (by time, parameters, or
// memory under the cap, the default).
#pragma once

#include <functional>
#include <optional>

#include "planner/plan.h"
#include "planner/search/search_contexts.h"
#include "step/stage_split.h"

namespace pipeplan::planner {

// The split balancing the stages' time alone.
std::optional<step::StageSplit> time_split(const LayerContext& layers, int stages);
// The split that makes the largest stage memory smallest, whatever the
// time (one chunk per rank; none otherwise).
std::optional<step::StageSplit> leanest_split(const LayerContext& layers, const ScheduleContext& context);
// The candidate's split, or none when no split fits under `cap`.
// `fastest(stages)` is time_split's answer for these layers (the search
// keeps them: schedules with as many stages share one).
std::optional<step::StageSplit> partition(const LayerContext& layers, const ScheduleContext& context,
                                          const PlanRequest& request, double cap,
                                          const std::function<std::optional<step::StageSplit>(int)>& fastest);

}  // namespace pipeplan::planner
