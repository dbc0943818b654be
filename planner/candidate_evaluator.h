// Costs the candidates of a plan search. For each group and recomputation
// the layers are expanded and timed once; each schedule is generated once per
// pipeline shape (p, m), shared by the groups that have it; for each
// schedule the split is chosen by the request's partitioner. A candidate is
// first bounded (no replay), and replayed only if the search still needs it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "planner/model_simulation.h"
#include "planner/plan_search.h"
#include "planner/search_space.h"

namespace pipeplan::planner {

struct LayerContext;
struct ScheduleContext;

// A candidate not yet replayed: where it comes from, its split, and the
// bounds no replay of it can beat.
struct PendingCandidate {
  std::size_t group = 0;     // into the search's groups
  std::size_t layers = 0;    // its recomputation, into the group's layer contexts
  std::size_t schedule = 0;  // into the schedule choices
  StageSplit split{std::vector<int>{0, 1}};
  StepBounds bounds;
  double tokens_bound = 0;   // tokens per second it cannot exceed
};

struct SearchTally {
  std::map<std::string, std::size_t> rejected;
  // Candidates the memory partitioner found no split for (none chosen).
  std::vector<PendingCandidate> unfitted;
};

class CandidateEvaluator {
 public:
  CandidateEvaluator(const PlanRequest& request, const std::vector<SearchGroup>& groups, double memory_cap_bytes);
  ~CandidateEvaluator();
  // Safe to call for different groups at once.
  void enumerate_group(std::size_t group, std::vector<PendingCandidate>& pending, SearchTally& tally);
  // The candidate's figures, exactly `pipeplan simulate --plan`'s.
  PlanCandidate replay(const PendingCandidate& pending) const;
  // Of candidates no split fits, the one that comes closest, with its
  // leanest split (by the partitioner's exact estimate; one chunk per rank
  // only); none when none has one.
  std::optional<PendingCandidate> closest_to_fitting(const std::vector<PendingCandidate>& unfitted) const;

 private:
  const ScheduleContext* schedule_of(std::size_t choice, const SearchGroup& group) const;

  const PlanRequest& request_;
  const std::vector<SearchGroup>& groups_;
  double cap_;
  std::vector<ScheduleChoice> schedules_;
  std::vector<models::Recompute> recomputes_;
  std::vector<std::vector<LayerContext>> layers_;  // per group, filled by enumerate_group
  // (choice, p, m) -> the schedule and its memory peaks; null when the
  // choice's preconditions fail there.
  std::map<std::tuple<std::size_t, int, int>, std::shared_ptr<const ScheduleContext>> schedule_cache_;
};

}  // namespace pipeplan::planner
