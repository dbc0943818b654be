// Costs the candidates of one search group: for each recomputation the
// layers are expanded and timed once; for each schedule the split is chosen
// by the request's partitioner and the configuration replayed by the
// simulator. One evaluator per worker thread.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/plan_search.h"
#include "planner/search_space.h"

namespace pipeplan::planner {

struct SearchTally {
  std::size_t evaluated = 0;
  std::map<std::string, std::size_t> rejected;
  std::optional<PlanCandidate> lowest_peak;
};

struct LayerContext;
struct ScheduleContext;

class CandidateEvaluator {
 public:
  CandidateEvaluator(const PlanRequest& request, double memory_cap_bytes);
  void evaluate_group(const SearchGroup& group, std::vector<PlanCandidate>& feasible, SearchTally& tally) const;

 private:
  PlanCandidate simulate_candidate(const SearchGroup& group, const LayerContext& layers, const ScheduleContext& context,
                                   const StageSplit& split) const;

  const PlanRequest& request_;
  double cap_;
  std::vector<ScheduleChoice> schedules_;
  std::vector<models::Recompute> recomputes_;
};

}  // namespace pipeplan::planner
