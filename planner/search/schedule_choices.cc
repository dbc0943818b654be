// The schedules a plan search tries (schedule_choices in search_space.h):
// the request's, a set's, or every generated family, each with the v values
// it runs, and with the recomputation run apart where the request asks.
#include "planner/search/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "planner/search/schedule_sets.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {
namespace {

std::vector<ScheduleChoice> plain_schedule_choices(const PlanRequest& request) {
  if (request.virtual_stages && *request.virtual_stages < 1) {
    throw InputError(fmt::format("--virtual must be >= 1 (got {})", *request.virtual_stages));
  }
  // The v values each family runs: single-chunk ones 1, V ones 2, looped
  // ones any from 2 up to a chunk per layer on two ranks (the evaluator
  // drops those with more stages than layers at its p).
  auto choices_for = [&](const sim::ScheduleFamily& family) {
    const std::string name(family.name);
    std::vector<ScheduleChoice> choices;
    if (sim::is_searched(family) &&
        (!request.virtual_stages || *request.virtual_stages == family.default_virtual_stages)) {
      // The memory limit as an axis: what the cap leaves, and Zero Bubble's
      // ZB-2p and ZB-1p limits (2p and p x M_B), lighter where they bind.
      using Unit = sim::ActivationLimit::Unit;
      choices.push_back({name, family.default_virtual_stages, std::nullopt, false});
      for (double depths : {2.0, 1.0}) {
        const sim::ActivationLimit limit{Unit::kPipelineDepths, depths};
        choices.push_back({name, family.default_virtual_stages, limit, false});
      }
    } else if (sim::runs_any_virtual_stages(family)) {
      if (request.virtual_stages) {
        choices.push_back({name, *request.virtual_stages, std::nullopt, false});
      } else {
        for (int v = 2; v <= std::max(2, request.model.layers / 2); ++v) {
          choices.push_back({name, v, std::nullopt, false});
        }
      }
    } else if (!request.virtual_stages || *request.virtual_stages == family.default_virtual_stages) {
      choices.push_back({name, family.default_virtual_stages, std::nullopt, false});
    }
    return choices;
  };
  if (request.schedule && is_schedule_set(*request.schedule)) {
    std::vector<ScheduleChoice> choices;
    for (const sim::ScheduleFamily* family : schedule_set_families(*request.schedule)) {
      for (const ScheduleChoice& choice : choices_for(*family)) choices.push_back(choice);
    }
    if (choices.empty()) {
      throw InputError(fmt::format("--virtual {}: no schedule of --schedule {} runs that many stages per rank",
                                   request.virtual_stages.value_or(0), *request.schedule));
    }
    return choices;
  }
  if (request.schedule) {
    const sim::ScheduleFamily& family = sim::find_schedule_family(*request.schedule);
    std::vector<ScheduleChoice> choices = choices_for(family);
    if (choices.empty()) {
      throw InputError(fmt::format("{} runs {} stage(s) per rank: --virtual must be {} (or left out), not {}",
                                   family.name, family.default_virtual_stages, family.default_virtual_stages,
                                   *request.virtual_stages));
    }
    return choices;
  }
  std::vector<ScheduleChoice> choices;
  // Every generated schedule but naive (one micro-batch, which GPipe with
  // m = 1 already is). A searched order (ZBAuto) only when asked for: before
  // its costs nothing bounds it tighter than any order could run, so nearly
  // every candidate would be searched and replayed (DeepSeek-V3 on 2,048
  // GPUs: 29.5 s instead of 1.6 s).
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    if (std::string_view(family.name) == "naive" || sim::is_searched(family)) continue;
    for (const ScheduleChoice& choice : choices_for(family)) choices.push_back(choice);
  }
  if (choices.empty()) throw InputError("--virtual: no searched schedule runs that many stages per rank");
  return choices;
}

// With recompute_in_bubbles, each generated choice again with the
// recomputation run apart.
std::vector<ScheduleChoice> with_bubble_recompute(const PlanRequest& request, std::vector<ScheduleChoice> choices) {
  if (!request.recompute_in_bubbles) return choices;
  const std::size_t plain = choices.size();
  for (std::size_t i = 0; i < plain; ++i) {
    if (sim::is_searched(sim::find_schedule_family(choices[i].name))) continue;
    ScheduleChoice apart = choices[i];
    apart.recompute_in_bubbles = true;
    choices.push_back(std::move(apart));
  }
  return choices;
}

}  // namespace

std::vector<ScheduleChoice> schedule_choices(const PlanRequest& request) {
  return with_bubble_recompute(request, plain_schedule_choices(request));
}

}  // namespace pipeplan::planner
