// The plan search over a cluster of several GPU kinds: each kind alone
// (the homogeneous search on its own nodes) and pipelines whose stages run
// on two or more kinds (planner/mixed/mixed_pipeline.h), every kind's GPUs used
// whole, each kind with its own t, the layers split by each kind's times
// under each kind's memory. A pipeline over kinds is bounded by its busiest
// rank's compute plus the step's overhead and replayed best bound first
// until no bound can reach the top; what is left out is counted.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "planner/mixed/mixed_pipeline.h"
#include "planner/plan.h"

namespace pipeplan::planner {

struct MixedPlan {
  MixedPipeline pipeline;
  // Its common choices and figures: tp is the first segment's, pp every
  // stage, peaks per pipeline rank.
  PlanCandidate plan;
};

// One kind alone: the homogeneous search on its nodes, or why none runs there.
struct KindSearch {
  std::size_t pool = 0;
  std::optional<PlanSearchResult> result;
  std::string refused;
};

struct MixedSearchResult {
  std::vector<KindPool> pools;
  std::vector<KindSearch> alone;   // per pool
  std::vector<MixedPlan> ranked;   // pipelines over several kinds that fit, fastest first, at most top_k
  std::map<std::string, std::size_t> rejected;  // reason -> count
  std::size_t layouts = 0;         // pipelines over several kinds: kinds, t, d, micro-batch, recomputation
  std::size_t candidates = 0;      // of their schedules, bounded one by one
  std::size_t evaluated = 0;       // of them, replayed
  std::size_t pruned = 0;          // skipped: their bounds could not reach the top
  double search_time_s = 0;
  // The fastest plan found: a kind alone (its pool), or none for ranked's first.
  std::optional<std::size_t> best_alone;
  bool found() const { return best_alone.has_value() || !ranked.empty(); }
  double best_time_s() const;
};

// The request's hardware and GPUs are the cluster's (request.gpus must be
// all of them). Pipelines over kinds take a dense model, c = 1, Megatron's
// default rank order, one recomputation on every stage and a generated
// schedule; InputError where the request fixes what they cannot take
// (mixed_request_check).
MixedSearchResult search_mixed_plans(const PlanRequest& request, const models::ClusterConfig& cluster,
                                     std::size_t top_k);

// What a request over several kinds cannot fix, named in one line; none
// where it can run.
void mixed_request_check(const PlanRequest& request, const models::ClusterConfig& cluster);

}  // namespace pipeplan::planner
