#include "sim/search/zero_bubble_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/error.h"
#include "common/units.h"
#include "sim/generators/support.h"
#include "sim/search/zero_bubble_greedy.h"

namespace pipeplan::sim {

void check_search_request(const ZeroBubbleSearchRequest& request) {
  const auto& stages = request.costs.stages;
  if (stages.empty()) throw InputError("schedule search: give the stages' costs (one stage per rank)");
  if (request.microbatches < 1) {
    throw InputError(fmt::format("--microbatches must be >= 1 (got {})", request.microbatches));
  }
  const auto& limits = request.memory_limit_bytes;
  if (limits.size() != 1 && limits.size() != stages.size()) {
    throw InputError(fmt::format("schedule memory limit: give one value or one per rank ({}), got {}", stages.size(),
                                 limits.size()));
  }
  for (std::size_t rank = 0; rank < stages.size(); ++rank) {
    const StageCost& cost = stages[rank];
    for (const auto& [value, name] : {std::pair{cost.forward_s, "--tf"}, std::pair{cost.backward_input_s, "--tb"},
                                      std::pair{cost.backward_weight_s, "--tw"}}) {
      if (!(value > 0) || !std::isfinite(value)) {
        throw InputError(
            fmt::format("{} on rank {}: a searched zero-bubble schedule needs F, I and W times > 0 "
                        "(got {}); give each pass's time",
                        name, rank, value));
      }
    }
    const std::int64_t limit = rank_memory_limit(request, static_cast<int>(rank));
    if (limit < cost.activation_bytes) {
      throw InputError(fmt::format(
          "schedule memory limit {} on rank {} is below one micro-batch's activations ({}); "
          "give at least that",
          format_bytes(static_cast<double>(limit)), rank, format_bytes(static_cast<double>(cost.activation_bytes))));
    }
  }
}

std::int64_t rank_memory_limit(const ZeroBubbleSearchRequest& request, int rank) {
  const auto& limits = request.memory_limit_bytes;
  return limits.size() == 1 ? limits.front() : limits[static_cast<std::size_t>(rank)];
}

namespace {

bool within_limits(const SimulationReport& report, const ZeroBubbleSearchRequest& request) {
  for (const RankReport& rank : report.ranks_detail) {
    if (rank.peak_activation_bytes > rank_memory_limit(request, rank.rank)) return false;
  }
  return true;
}

}  // namespace

namespace {

// 1F1B's pattern with the backward split, each rank warming up with at
// most `held` - 1 forwards (so holding at most `held` micro-batches), its W
// right after its I or, as ZB-H1, deferred by its rank: the handcrafted
// orders at each memory, tried beside the greedy's where memory binds.
Schedule capped_one_f_one_b(int ranks, int microbatches, int held, bool defer_weights) {
  Schedule schedule = make_schedule("ZBAuto", {ranks, microbatches, 1, 0}, StagePlacement::kLoop);
  for (int rank = 0; rank < ranks; ++rank) {
    OneFOneBOrder order;
    for (int mb = 0; mb < microbatches; ++mb) {
      order.forwards.push_back({rank, mb, OpKind::kForward});
      order.backwards.push_back({rank, mb, OpKind::kBackwardInput});
    }
    order.warmup = std::min({ranks - rank - 1, held - 1, microbatches});
    order.split_backward = true;
    order.weight_delay = defer_weights ? rank : 0;
    schedule.actions[static_cast<std::size_t>(rank)] = expand_one_f_one_b(order);
  }
  return schedule;
}

}  // namespace

SearchedSchedule search_zero_bubble(const ZeroBubbleSearchRequest& request) {
  check_search_request(request);
  std::optional<SearchedSchedule> best;
  int tried = 0;
  const auto consider = [&](Schedule schedule) {
    ++tried;
    SimulationReport report = simulate(schedule, request.costs, request.topology);
    if (!within_limits(report, request)) return;
    // Ties keep the first found, so the result is the same every run.
    if (!best || report.cost_s < best->report.cost_s) best = SearchedSchedule{std::move(schedule), std::move(report), 0};
  };
  for (const bool delay : {false, true}) {
    for (const bool backward_first : {false, true}) {
      for (const bool fill : {false, true}) {
        std::optional<Schedule> schedule = detail::greedy_zero_bubble_order(request, {delay, backward_first, fill});
        if (schedule) {
          consider(std::move(*schedule));
        } else {
          ++tried;
        }
      }
    }
  }
  // Where memory binds (a rank may not hold the p micro-batches 1F1B's
  // first rank does), the handcrafted orders at each smaller memory; and
  // where no greedy order kept to the limit (a W that frees all of M_B, as
  // with full recomputation, holds its micro-batch until the deferred W).
  const int ranks = static_cast<int>(request.costs.stages.size());
  bool binds = false;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::int64_t full = (ranks - rank) * request.costs.stages[static_cast<std::size_t>(rank)].activation_bytes;
    binds = binds || rank_memory_limit(request, rank) < full;
  }
  if (!best) binds = true;
  for (int held = 1; binds && held <= ranks; ++held) {
    for (const bool defer : {false, true}) consider(capped_one_f_one_b(ranks, request.microbatches, held, defer));
  }
  if (!best) {
    throw InputError(
        "schedule memory limit: no zero-bubble order keeps every rank within it (each forward needs a backward "
        "done before it); raise the limit");
  }
  best->variants_tried = tried;
  return std::move(*best);
}

}  // namespace pipeplan::sim
