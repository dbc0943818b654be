#include "planner/mixed/mixed_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <tuple>

#include "common/error.h"
#include "planner/mixed/mixed_candidates.h"
#include "planner/search/plan_search.h"
#include "planner/search/search_space.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {

double MixedSearchResult::best_time_s() const {
  if (!best_alone) return ranked.empty() ? 0 : ranked.front().plan.iteration_time_s;
  return alone[*best_alone].result->ranked.front().iteration_time_s;
}

void mixed_request_check(const PlanRequest& request, const models::ClusterConfig& cluster) {
  std::vector<std::string> kinds;
  for (const KindPool& pool : kind_pools(cluster)) kinds.push_back(fmt::format("{} {}", pool.gpus(), pool.kind));
  if (request.gpus != cluster.gpus()) {
    throw InputError(fmt::format("--gpus {}: cluster {} mixes GPU kinds ({}) and is planned whole: give --gpus {}",
                                 request.gpus, cluster.name, fmt::join(kinds, ", "), cluster.gpus()));
  }
  // The fewest GPUs the fixed sizes take.
  long long fixed = 1;
  std::vector<std::string> sizes;
  for (const auto& [option, size] : {std::pair{"--tp", request.tp}, std::pair{"--pp", request.pp},
                                     std::pair{"--dp", request.dp}}) {
    if (!size) continue;
    fixed *= *size;
    sizes.push_back(fmt::format("{} {}", option, *size));
  }
  if (fixed > cluster.gpus()) {
    throw InputError(fmt::format("{} {} {} GPUs, more than {} has ({}): fix smaller sizes", fmt::join(sizes, " x "),
                                 sizes.size() == 1 ? "takes" : "take", fixed, cluster.name, fmt::join(kinds, ", ")));
  }
  const auto refuse = [&](const char* what) {
    throw InputError(fmt::format("{} is not built for clusters of several GPU kinds ({}): drop it", what, cluster.name));
  };
  if (request.cp.value_or(1) != 1) refuse("--cp above 1");
  if (request.ep.value_or(1) != 1 || request.etp) refuse("--ep above 1 and --etp");
  if (request.profile) refuse("--profile (one kind's measurements)");
  if (request.rank_order.value_or(false)) refuse("--rank-order tp-pp-dp");
  if (request.allow_cross_node_tp) refuse("--allow-cross-node-tp");
  if (request.recompute_in_bubbles) refuse("--recompute-in-bubbles");
  if (request.objective == Objective::kMemory) refuse("--objective memory");
  if (request.objective == Objective::kGoodput) refuse("--objective goodput");
  if (request.schedule && !is_schedule_set(*request.schedule) &&
      sim::is_searched(sim::find_schedule_family(*request.schedule))) {
    refuse("a searched --schedule");
  }
}

MixedSearchResult search_mixed_plans(const PlanRequest& request, const models::ClusterConfig& cluster,
                                     std::size_t top_k) {
  const auto start = std::chrono::steady_clock::now();
  mixed_request_check(request, cluster);
  MixedSearchResult result;
  result.pools = kind_pools(cluster);
  for (std::size_t pool = 0; pool < result.pools.size(); ++pool) {
    PlanRequest alone = request;
    alone.hardware = result.pools[pool].hardware;
    alone.gpus = result.pools[pool].gpus();
    KindSearch search{pool, std::nullopt, ""};
    try {
      search.result = search_plans(alone, top_k);
      if (search.result->ranked.empty()) {
        const std::optional<PlanCandidate>& lowest = search.result->lowest_peak;
        search.refused = lowest ? fmt::format("no plan fits its memory (the smallest peak found is {:.2f} GiB)",
                                              static_cast<double>(lowest->max_peak_bytes) / (1 << 30))
                                : "no plan fits its memory";
      }
    } catch (const InputError& error) {
      search.refused = error.what();
      search.result.reset();
    }
    const bool found = search.result && !search.result->ranked.empty();
    if (found && (!result.best_alone || search.result->ranked.front().iteration_time_s <
                                            result.alone[*result.best_alone].result->ranked.front().iteration_time_s)) {
      result.best_alone = pool;
    }
    result.alone.push_back(std::move(search));
  }
  if (request.model.moe.enabled()) {
    ++result.rejected["pipelines over kinds take dense models"];
  } else {
    MixedCandidates candidates(request, result.pools, cluster.tiers, result);
    std::vector<MixedPending> pending = candidates.layouts();
    result.layouts = pending.size();
    // Best bound first: a layout comes up as its candidates, a candidate as
    // itself expanded (schedule, split, tighter bound), an expanded one is
    // replayed. What is left when the least bound cannot reach the top is
    // skipped.
    const auto later = [&](std::size_t a, std::size_t b) {
      return std::tie(pending[a].bound_s, a) > std::tie(pending[b].bound_s, b);
    };
    std::vector<std::size_t> queue(pending.size());
    std::iota(queue.begin(), queue.end(), std::size_t{0});
    std::make_heap(queue.begin(), queue.end(), later);
    const auto push = [&](std::size_t entry) {
      queue.push_back(entry);
      std::push_heap(queue.begin(), queue.end(), later);
    };
    const auto faster = [](const MixedPlan& a, const MixedPlan& b) {
      return a.plan.iteration_time_s < b.plan.iteration_time_s;
    };
    while (!queue.empty()) {
      std::pop_heap(queue.begin(), queue.end(), later);
      const std::size_t next = queue.back();
      queue.pop_back();
      if (request.prune && result.ranked.size() >= top_k &&
          pending[next].bound_s >= result.ranked.back().plan.iteration_time_s) {
        queue.push_back(next);
        for (std::size_t left : queue) result.pruned += candidates.choices_in(pending[left]);
        break;
      }
      if (!pending[next].schedule) {
        for (MixedPending& candidate : candidates.candidates_of(pending[next])) {
          pending.push_back(std::move(candidate));
          push(pending.size() - 1);
        }
        continue;
      }
      if (!pending[next].expanded) {
        if (candidates.expand(pending[next])) push(next);
        continue;
      }
      ++result.evaluated;
      std::optional<MixedPlan> plan = candidates.replay(pending[next]);
      pending[next].costs.reset();
      if (!plan) {
        ++result.rejected["out of memory"];
        continue;
      }
      result.ranked.insert(std::upper_bound(result.ranked.begin(), result.ranked.end(), *plan, faster), *plan);
      if (result.ranked.size() > top_k) result.ranked.pop_back();
    }
  }
  if (result.best_alone && !result.ranked.empty() &&
      result.ranked.front().plan.iteration_time_s < result.best_time_s()) {
    result.best_alone.reset();
  }
  result.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace pipeplan::planner
