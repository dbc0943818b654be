#include "planner/plan_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "common/parallel.h"
#include "planner/candidate_evaluator.h"
#include "planner/plan_replay.h"
#include "planner/search_space.h"

namespace pipeplan::planner {
namespace {

// What one worker found; merged in group order so results do not depend on
// the number of threads.
struct GroupResult {
  std::vector<PlanCandidate> feasible;
  SearchTally tally;
};

bool better(const PlanCandidate& a, const PlanCandidate& b, Objective objective) {
  const auto key = [](const PlanCandidate& c) {
    return std::make_tuple(c.tp, c.pp, c.micro_batch_size, c.schedule, c.virtual_stages, static_cast<int>(c.recompute));
  };
  if (objective == Objective::kThroughput) {
    if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
    if (a.max_peak_bytes != b.max_peak_bytes) return a.max_peak_bytes < b.max_peak_bytes;
  } else {
    if (a.max_peak_bytes != b.max_peak_bytes) return a.max_peak_bytes < b.max_peak_bytes;
    if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  }
  return key(a) < key(b);
}

// Candidates no other beats on both iteration time and peak memory.
std::vector<PlanCandidate> pareto_front(std::vector<PlanCandidate> candidates) {
  std::sort(candidates.begin(), candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.iteration_time_s != b.iteration_time_s) return a.iteration_time_s < b.iteration_time_s;
    return better(a, b, Objective::kMemory);
  });
  std::vector<PlanCandidate> front;
  for (PlanCandidate& candidate : candidates) {
    if (front.empty() || candidate.max_peak_bytes < front.back().max_peak_bytes) front.push_back(std::move(candidate));
  }
  return front;
}

// The search ranks with the replay that lets no transfer queue; what it
// reports is replayed by the full engine (links carry one message at a
// time), so its figures are exactly `pipeplan simulate --plan`'s.
void recost_with_engine(std::vector<PlanCandidate>& candidates, const PlanRequest& request) {
  for (PlanCandidate& candidate : candidates) {
    const PlanFile file{"", "", request.global_batch, request.seq_len, candidate, "", request.profile_file};
    take_figures(replay_plan(file, request.model, request.hardware, {}, request.profile ? &*request.profile : nullptr,
                             static_cast<std::int64_t>(request.memory_cap_bytes)),
                 candidate);
  }
}

// Worth a look, though the search can serve them.
std::vector<std::string> request_warnings(const PlanRequest& request) {
  std::vector<std::string> warnings;
  const int per_node = request.hardware.gpus_per_node;
  if (request.gpus > per_node && request.gpus % per_node != 0) {
    warnings.push_back(fmt::format("{} GPUs do not fill whole nodes of {}: {} full nodes and {} GPUs of another; "
                                   "groups that span the part node talk over its network",
                                   request.gpus, per_node, request.gpus / per_node, request.gpus % per_node));
  }
  if (request.seq_len > request.model.context) {
    warnings.push_back(fmt::format("--seq {} is beyond {}'s context of {} tokens (--allow-long-context): costed as "
                                   "given, without context parallelism",
                                   request.seq_len, request.model.name, request.model.context));
  }
  return warnings;
}

std::vector<GroupResult> run_groups(const PlanRequest& request, const std::vector<SearchGroup>& groups,
                                    double cap) {
  std::vector<GroupResult> results(groups.size());
  const CandidateEvaluator evaluator(request, cap);
  parallel_for(groups.size(), request.threads, [&](std::size_t index) {
    evaluator.evaluate_group(groups[index], results[index].feasible, results[index].tally);
  });
  return results;
}

}  // namespace

models::TrainingShape candidate_shape(const PlanCandidate& candidate, int seq_len) {
  models::TrainingShape shape;
  shape.micro_batch_size = candidate.micro_batch_size;
  shape.seq_len = seq_len;
  shape.tp = candidate.tp;
  shape.dp = candidate.dp;
  shape.sequence_parallel = candidate.sequence_parallel;
  shape.recompute = candidate.recompute;
  shape.zero = candidate.zero;
  return shape;
}

void take_figures(const ModelSimulation& simulation, PlanCandidate& candidate) {
  candidate.split = simulation.split;
  candidate.iteration_time_s = simulation.iteration_time_s;
  candidate.tokens_per_s = simulation.tokens_per_s;
  candidate.mfu = simulation.mfu;
  candidate.bubble_rate = simulation.report.bubble_rate;
  candidate.peak_memory_bytes.clear();
  for (const MemoryBreakdown& rank : simulation.memory) candidate.peak_memory_bytes.push_back(rank.total());
  candidate.max_peak_bytes = simulation.peak_memory_bytes();
}

PlanSearchResult search_plans(const PlanRequest& request, std::size_t top_k) {
  const auto start = std::chrono::steady_clock::now();
  const double cap =
      request.memory_cap_bytes > 0 ? request.memory_cap_bytes : static_cast<double>(request.hardware.gpu.usable_memory_bytes());
  PlanSearchResult result;
  result.memory_cap_bytes = cap;
  result.warnings = request_warnings(request);
  // A given split is checked here, once, so that workers never meet a bad one.
  if (request.layer_counts) split_from_counts(*request.layer_counts, request.model.layers);
  if (request.layout) split_from_layout(*request.layout, request.model.layers, layout_stage_count(*request.layout));
  const SearchSpace space(request);
  std::vector<PlanCandidate> feasible;
  for (GroupResult& group : run_groups(request, space.groups(), cap)) {
    result.candidates_evaluated += group.tally.evaluated;
    for (const auto& [reason, count] : group.tally.rejected) result.rejected[reason] += count;
    if (group.tally.lowest_peak &&
        (!result.lowest_peak || group.tally.lowest_peak->max_peak_bytes < result.lowest_peak->max_peak_bytes)) {
      result.lowest_peak = std::move(group.tally.lowest_peak);
    }
    for (PlanCandidate& candidate : group.feasible) feasible.push_back(std::move(candidate));
  }
  for (const auto& [reason, count] : space.rejected()) result.rejected[reason] += count;
  auto by_objective = [&](const PlanCandidate& a, const PlanCandidate& b) { return better(a, b, request.objective); };
  std::sort(feasible.begin(), feasible.end(), by_objective);
  result.pareto = pareto_front(feasible);
  recost_with_engine(result.pareto, request);
  result.pareto = pareto_front(std::move(result.pareto));
  // Queueing can reorder near-ties: re-cost twice as many as will be shown.
  if (feasible.size() > 2 * top_k) feasible.resize(2 * top_k);
  recost_with_engine(feasible, request);
  std::erase_if(feasible, [&](const PlanCandidate& c) { return static_cast<double>(c.max_peak_bytes) > cap; });
  std::sort(feasible.begin(), feasible.end(), by_objective);
  if (feasible.size() > top_k) feasible.resize(top_k);
  result.ranked = std::move(feasible);
  // With nothing under the cap, say how close the search came, in the
  // figures `simulate --plan` would give.
  if (result.ranked.empty() && result.lowest_peak) {
    std::vector<PlanCandidate> lowest{*result.lowest_peak};
    recost_with_engine(lowest, request);
    result.lowest_peak = lowest.front();
  }
  result.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace pipeplan::planner
