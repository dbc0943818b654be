#include "step/searched_order.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "common/units.h"
#include "sim/search/searched_schedule.h"
#include "sim/search/zero_bubble_search.h"

namespace pipeplan::step {

bool limit_redundant(const sim::ActivationLimit& limit, std::int64_t memory_cap, const sim::PipelineCosts& costs) {
  if (memory_cap <= 0) return false;
  const std::vector<std::int64_t> within = sim::activation_limits(limit, costs);
  const std::vector<std::int64_t> capped = sim::limits_under_cap(memory_cap, costs);
  bool binds = false;
  for (std::size_t rank = 0; rank < capped.size(); ++rank) {
    if (capped[rank] < costs.stages[rank].activation_bytes) return true;
    binds = binds || within[rank] < capped[rank];
  }
  return !binds;
}

void check_no_bubble_recompute(const std::string& family, bool recompute_in_bubbles) {
  if (!recompute_in_bubbles) return;
  throw InputError(fmt::format("recomputation in the bubbles with {} is not built: its order is searched without the "
                               "recomputed activations, so it would not keep to its limit; choose a generated "
                               "schedule or --recompute-in-bubbles=false",
                               family));
}

SearchedOrder search_order(const std::string& family, const sim::PipelineCosts& costs,
                           const sim::Topology& topology, int microbatches,
                           const std::optional<sim::ActivationLimit>& activation_limit, std::int64_t memory_cap,
                           const std::string& cap_source, const std::string& limit_source) {
  sim::ZeroBubbleSearchRequest request;
  request.microbatches = microbatches;
  request.costs = costs;
  request.topology = topology;
  std::string within;
  if (activation_limit) {
    request.memory_limit_bytes = sim::activation_limits(*activation_limit, costs);
    within = fmt::format("{} per rank ({})", activation_limit->describe(), limit_source);
    if (memory_cap > 0) {
      // Both bound it: the tighter on each rank.
      const std::vector<std::int64_t> capped = sim::limits_under_cap(memory_cap, costs);
      for (std::size_t rank = 0; rank < capped.size(); ++rank) {
        request.memory_limit_bytes[rank] = std::min(request.memory_limit_bytes[rank], capped[rank]);
      }
      within += fmt::format(" and what {} ({}) leaves beside each rank's static memory", cap_source,
                            format_bytes(static_cast<double>(memory_cap)));
    }
  } else if (memory_cap > 0) {
    request.memory_limit_bytes = sim::limits_under_cap(memory_cap, costs);
    within = fmt::format("what {} ({}) leaves beside each rank's static memory", cap_source,
                         format_bytes(static_cast<double>(memory_cap)));
    // Where the cap leaves a rank less than one micro-batch, no order fits:
    // the order holding one, whose replay shows the rank over the cap.
    for (std::size_t rank = 0; rank < costs.stages.size(); ++rank) {
      if (request.memory_limit_bytes[rank] >= costs.stages[rank].activation_bytes) continue;
      const sim::ActivationLimit one{sim::ActivationLimit::Unit::kMicrobatches, 1};
      request.memory_limit_bytes = sim::activation_limits(one, costs);
      within = fmt::format("1 x M_B per rank, as {} ({}) leaves rank {} less than one micro-batch beside its static "
                           "memory",
                           cap_source, format_bytes(static_cast<double>(memory_cap)), rank);
      break;
    }
  } else {
    const sim::ActivationLimit limit;  // p x M_B: what 1F1B holds on its first rank
    request.memory_limit_bytes = sim::activation_limits(limit, costs);
    within = fmt::format("{} per rank (the default without --activation-limit or --memory-cap: what 1F1B holds)",
                         limit.describe());
  }
  try {
    sim::SearchedSchedule searched = sim::search_zero_bubble(request);
    searched.schedule.name = family;
    return {std::move(searched.schedule),
            fmt::format("{}: the fastest of {} orders searched within {}", family, searched.variants_tried, within)};
  } catch (const InputError& error) {
    throw InputError(fmt::format("{} within {}: {}", family, within, error.what()));
  }
}

}  // namespace pipeplan::step
