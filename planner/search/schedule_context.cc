#include "planner/search/schedule_context.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/pass_pairing.h"
#include "sim/search/searched_schedule.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

namespace {

// A searched order is known only with its costs: before them, every rank
// holds at least one micro-batch at its peak (its first I needs its first
// F's activations), and the outline's span bound holds for any order. With
// no peak points the split balances time; the replay checks memory.
ScheduleContext searched_context(const ScheduleChoice& choice, int pp, int microbatches) {
  ScheduleContext context = schedule_outline(choice, pp, microbatches, false);
  context.schedule = sim::searched_schedule_shape(choice.name, pp, microbatches);
  for (int rank = 0; rank < pp; ++rank) context.profiles.push_back({{rank}, {{{1}, {0}}}});
  context.fewest_held = 1;
  return context;
}

}  // namespace

std::optional<ScheduleContext> schedule_context(const ScheduleChoice& choice, int pp, int microbatches,
                                                bool moe_a2a_overlap) {
  if (sim::is_searched(sim::find_schedule_family(choice.name))) return searched_context(choice, pp, microbatches);
  ScheduleContext context{choice, {}, {}, {}, {}, 0};
  try {
    context.schedule = step::run_schedule(choice.name, {pp, microbatches, choice.virtual_stages, 0}, moe_a2a_overlap);
  } catch (const InputError&) {
    return std::nullopt;
  }
  context.span = sim::SpanBound(context.schedule);
  context.profiles = step::memory_profiles(context.schedule);
  context.fewest_held = std::numeric_limits<int>::max();
  for (const step::RankMemoryProfile& profile : context.profiles) {
    int most = 0;
    for (const step::MemoryPoint& point : profile.points) {
      if (!point.full.empty()) most = std::max(most, *std::min_element(point.full.begin(), point.full.end()));
    }
    context.fewest_held = std::min(context.fewest_held, most);
  }
  if (context.profiles.empty()) context.fewest_held = 0;
  if (context.schedule.virtual_stages() == 1) {
    for (const step::RankMemoryProfile& profile : context.profiles) {
      std::vector<std::pair<int, int>> points;
      for (const step::MemoryPoint& point : profile.points) points.emplace_back(point.full[0], point.partial[0]);
      context.peak_points.push_back(std::move(points));
    }
  }
  context.schedule.actions = {};
  return context;
}

// What every schedule of a choice at (p, m) shares, known before one is
// generated: its ranks and stages, how often each stage runs each pass,
// whether W may run apart and whether passes may pair; and, at its memory
// peak, every rank holds at least one micro-batch on each of its chunks (the
// first backward of its last chunk still holds that micro-batch's earlier
// chunks). Each bound taken from it is no higher than the schedule's own.
ScheduleContext schedule_outline(const ScheduleChoice& choice, int pp, int microbatches, bool moe_a2a_overlap) {
  const sim::ScheduleFamily& family = sim::find_schedule_family(choice.name);
  const bool whole_batch = sim::runs_whole_batch(family);
  ScheduleContext outline{choice, {}, {}, {}, {}, 1};
  outline.schedule.name = family.name;
  outline.schedule.ranks = pp;
  outline.schedule.stages = pp * choice.virtual_stages;
  outline.schedule.microbatches = whole_batch ? 1 : microbatches;
  outline.schedule.microbatch_scale = whole_batch ? microbatches : 1;
  const bool pairs = sim::pairs_own_passes(family) ||
                     (moe_a2a_overlap && sim::pairs_forward_backward(family.name, choice.virtual_stages));
  outline.span = sim::SpanBound::outline(pp, outline.schedule.microbatches, family.splits_backward, pairs);
  return outline;
}

}  // namespace pipeplan::planner
