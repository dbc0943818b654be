// The configurations a plan search visits. A group fixes the tensor-,
// context- and pipeline-parallel sizes and the micro-batch size (so the data-parallel
// size and the micro-batch count); within it the evaluator tries every
// recomputation and schedule. Fixed choices in the request narrow each axis.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/plan.h"
#include "planner/search/schedule_sets.h"
#include "sim/generators/registry.h"
#include "sim/search/activation_limit.h"

namespace pipeplan::planner {

// The largest global batch a search plans, in sequences: far beyond any
// published run's (MLPerf's Llama 3.1 405B: 1,536 of 8,192 tokens), and
// bounded because the search's time and memory grow with the micro-batches
// per replica (2^20 on 8 GPUs: under 2 GiB).
inline constexpr int kMostGlobalBatch = 1 << 20;

struct SearchGroup {
  int tp = 1, cp = 1, pp = 1, dp = 1, micro_batch_size = 1, microbatches = 1;
  int ep = 1, etp = 0;  // expert parallelism (etp 0: as t)
  bool pipeline_first = false;  // Megatron's --use-tp-pp-dp-mapping (TrainingShape::pipeline_first_ranks)
};

// Tokens one step of the group's layout trains on.
inline double step_tokens(const SearchGroup& group, int seq_len) {
  return static_cast<double>(group.micro_batch_size) * group.microbatches * group.dp * seq_len;
}

struct ScheduleChoice {
  std::string name;
  int virtual_stages = 1;
  // A searched order's limit on each rank's activations beside the cap
  // (the tighter of the two binds); none: the cap's alone.
  std::optional<sim::ActivationLimit> activation_limit;
  // The recomputation run apart, before the backwards (PlanRequest::
  // recompute_in_bubbles); only candidates that recompute take it.
  bool recompute_in_bubbles = false;
};

class SearchSpace {
 public:
  // Throws InputError naming the fix when no layout divides the GPUs and the
  // global batch.
  explicit SearchSpace(const PlanRequest& request);
  const std::vector<SearchGroup>& groups() const { return groups_; }
  // Layouts dropped before costing, by reason.
  const std::map<std::string, std::size_t>& rejected() const { return rejected_; }

 private:
  // The groups of tensor-parallel size t and context-parallel size c.
  void add_groups(const PlanRequest& request, int t, int c, std::vector<int>& replica_batches);
  std::vector<SearchGroup> groups_;
  std::map<std::string, std::size_t> rejected_;
};

// Every generated schedule but naive, the looped ones (Interleaved1F1B,
// LoopedBFS, InterleavedZeroBubble) with every v from 2 to layers / 2; or the
// request's schedule (with its v, or the v values worth trying), which may
// be a searched one (ZBAuto).
std::vector<ScheduleChoice> schedule_choices(const PlanRequest& request);
// The frameworks whose shardings a group tries: the one the request keeps
// to, or with kAny every framework besides kAny's own (so that each one's
// best is found).
std::vector<step::Framework> searched_frameworks(const PlanRequest& request);
// Recomputation with, for selective, the modules it recomputes.
struct RecomputeChoice {
  models::Recompute recompute = models::Recompute::kNone;
  unsigned modules = models::kDefaultRecomputeModules;
  // Each stage one of none, selective (with `modules`) and full, chosen
  // with the split (planner/search/stage_recompute_split.h); `recompute` is none.
  bool per_stage = false;
};
// The tensor-parallel sizes the search tries on the request's hardware and
// GPUs (those that divide the heads and stay in an NVLink domain, or the
// fixed one), counting the others in `rejected` by reason.
std::vector<int> tp_choices(const PlanRequest& request, std::map<std::string, std::size_t>& rejected);
// The training shape of a group's candidates with this sharding and recomputation.
models::TrainingShape group_shape(const PlanRequest& request, const SearchGroup& group, models::ZeroStage zero,
                                  const RecomputeChoice& recompute);
// The candidate a group, its shape and a schedule choice make (without
// figures: take_figures adds a replay's).
PlanCandidate describe_candidate(const SearchGroup& group, const models::TrainingShape& shape,
                                 const ScheduleChoice& choice);
// none, selective (models::default_recompute_modules) and full, and per
// stage where the memory partitioner splits for throughput; or what the
// request fixes (its modules imply selective).
std::vector<RecomputeChoice> recompute_choices(const PlanRequest& request);

}  // namespace pipeplan::planner
