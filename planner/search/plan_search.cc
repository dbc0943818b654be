#include "planner/search/plan_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>

#include "common/error.h"
#include "common/parallel.h"
#include "planner/goodput/goodput_objective.h"
#include "planner/search/candidate_evaluator.h"
#include "planner/search/plan_warnings.h"
#include "planner/search/search_space.h"

namespace pipeplan::planner {
namespace {

bool better(const PlanCandidate& a, const PlanCandidate& b, Objective objective) {
  const auto key = [](const PlanCandidate& c) {
    return std::make_tuple(c.tp, c.pp, c.micro_batch_size, c.schedule, c.virtual_stages, static_cast<int>(c.recompute),
                           c.recompute_modules, c.stage_recompute);
  };
  if (objective == Objective::kGoodput) {
    if (a.effective_tokens_per_s != b.effective_tokens_per_s) return a.effective_tokens_per_s > b.effective_tokens_per_s;
    if (a.max_peak_bytes != b.max_peak_bytes) return a.max_peak_bytes < b.max_peak_bytes;
  } else if (objective == Objective::kThroughput) {
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
    if (!front.empty() && candidate.max_peak_bytes >= front.back().max_peak_bytes) continue;
    // As fast but for rounding (two searched orders' sums in another
    // order) and lighter: it dominates the one before.
    while (!front.empty() &&
           candidate.iteration_time_s - front.back().iteration_time_s <= 1e-9 * front.back().iteration_time_s) {
      front.pop_back();
    }
    front.push_back(std::move(candidate));
  }
  return front;
}

// Candidates are split or replayed in batches of this many, best bound first; after
// each batch the bounds to beat tighten. Fixed, so that what is replayed
// does not depend on the number of threads.
constexpr std::size_t kBatch = 16;

// Whether two candidates are one plan but for a searched order's activation
// limit, and the limit changed nothing (the same order: the same figures).
bool same_but_limit(const PlanCandidate& a, const PlanCandidate& b) {
  const auto layout = [](const PlanCandidate& c) {
    return std::tie(c.tp, c.cp, c.pp, c.dp, c.ep, c.etp, c.micro_batch_size, c.microbatches, c.virtual_stages,
                    c.schedule, c.recompute, c.recompute_modules, c.stage_recompute, c.recompute_in_bubbles,
                    c.sequence_parallel, c.zero, c.split, c.max_peak_bytes);
  };
  return a.activation_limit != b.activation_limit && layout(a) == layout(b) &&
         std::abs(a.iteration_time_s - b.iteration_time_s) <= 1e-9 * b.iteration_time_s;
}

// Whether two candidates are one plan on one pipeline rank: there every
// single-chunk schedule runs the micro-batches the same way when the
// figures agree, and only the name differs.
bool same_on_one_rank(const PlanCandidate& a, const PlanCandidate& b) {
  const auto layout = [](const PlanCandidate& c) {
    return std::tie(c.tp, c.cp, c.pp, c.dp, c.ep, c.etp, c.micro_batch_size, c.microbatches, c.virtual_stages,
                    c.recompute, c.recompute_modules, c.stage_recompute, c.recompute_in_bubbles, c.sequence_parallel,
                    c.zero, c.pipeline_first, c.split, c.max_peak_bytes);
  };
  return a.pp == 1 && a.virtual_stages == 1 && a.schedule != b.schedule && layout(a) == layout(b) &&
         std::abs(a.iteration_time_s - b.iteration_time_s) <= 1e-9 * b.iteration_time_s;
}

// Of two such, the one searched within the looser limit (none is loosest).
bool looser_limit(const PlanCandidate& a, const PlanCandidate& b) {
  if (!a.activation_limit || !b.activation_limit) return !a.activation_limit && b.activation_limit;
  return a.activation_limit->value > b.activation_limit->value;
}

// Whether a candidate no replay can bring into the top, onto the Pareto
// front or (tracking frameworks) to the best plan of a framework that runs
// it may be skipped: its bound on the objective is worse than the k-th best
// found and than each such framework's best, and some found plan is
// strictly better in both iteration time and peak memory than its bounds.
class Pruner {
 public:
  // `goodput_ceiling`: no plan's goodput is above it (Objective::kGoodput).
  Pruner(Objective objective, std::size_t top_k, double goodput_ceiling, bool track_frameworks)
      : objective_(objective), top_k_(top_k), goodput_ceiling_(goodput_ceiling), track_frameworks_(track_frameworks) {}

  bool skip(const PendingCandidate& c) const {
    if (c.framework_only) return beaten_in_frameworks(c);
    if (ranked_.size() < top_k_ || !bound_worse(c, ranked_.back())) return false;
    const bool dominated = std::any_of(front_.begin(), front_.end(), [&](const PlanCandidate& a) {
      return a.iteration_time_s < c.bounds.iteration_time_s && a.max_peak_bytes < c.bounds.peak_bytes;
    });
    if (!dominated) return false;
    return !track_frameworks_ || beaten_in_frameworks(c);
  }

  // `framework_only`: a candidate tried for some framework's best alone.
  void add(const PlanCandidate& candidate, bool framework_only) {
    if (track_frameworks_) {
      for (std::size_t f = 0; f < step::kFrameworkCount; ++f) {
        if ((candidate.frameworks & (1u << f)) == 0) continue;
        std::optional<PlanCandidate>& best = framework_best_[f];
        const bool looser_twin = best && same_but_limit(*best, candidate) && looser_limit(candidate, *best);
        if (!best || better(candidate, *best, objective_) || looser_twin) best = candidate;
      }
    }
    if (framework_only) return;
    // A limit that left the order as it was is the same plan: listed once,
    // with the looser limit.
    bool listed = false;
    for (std::vector<PlanCandidate>* list : {&ranked_, &front_}) {
      for (PlanCandidate& kept : *list) {
        if (same_on_one_rank(kept, candidate)) {
          if (better(candidate, kept, objective_)) kept = candidate;
          listed = true;
          continue;
        }
        if (!same_but_limit(kept, candidate)) continue;
        if (looser_limit(candidate, kept)) kept = candidate;
        listed = true;
      }
    }
    if (listed) return;
    ranked_.push_back(candidate);
    std::sort(ranked_.begin(), ranked_.end(),
              [&](const PlanCandidate& a, const PlanCandidate& b) { return better(a, b, objective_); });
    if (ranked_.size() > top_k_) ranked_.resize(top_k_);
    front_.push_back(candidate);
    front_ = pareto_front(std::move(front_));
  }

  std::vector<PlanCandidate> ranked() const { return ranked_; }
  std::vector<PlanCandidate> front() const { return front_; }
  const std::array<std::optional<PlanCandidate>, step::kFrameworkCount>& framework_best() const {
    return framework_best_;
  }

 private:
  // Whether every framework that runs the candidate has found a plan its
  // bound cannot beat.
  bool beaten_in_frameworks(const PendingCandidate& c) const {
    for (std::size_t f = 0; f < step::kFrameworkCount; ++f) {
      if ((c.frameworks & (1u << f)) == 0) continue;
      if (!framework_best_[f] || !bound_worse(c, *framework_best_[f])) return false;
    }
    return true;
  }

  // Whether the candidate's bound on the objective is worse than a found plan's.
  bool bound_worse(const PendingCandidate& c, const PlanCandidate& found) const {
    switch (objective_) {
      case Objective::kThroughput: return c.tokens_bound < found.tokens_per_s;
      case Objective::kGoodput: return c.tokens_bound * goodput_ceiling_ < found.effective_tokens_per_s;
      case Objective::kMemory: return static_cast<double>(c.bounds.peak_bytes) > static_cast<double>(found.max_peak_bytes);
    }
    return false;
  }

  Objective objective_;
  std::size_t top_k_;
  double goodput_ceiling_;
  bool track_frameworks_;
  std::vector<PlanCandidate> ranked_;  // the best so far, at most top_k
  std::vector<PlanCandidate> front_;   // the Pareto front so far
  std::array<std::optional<PlanCandidate>, step::kFrameworkCount> framework_best_;
};

// Whether a candidate's peak, which is at least its bound, must be over the
// cap and cannot be the lowest peak found (which the search reports when
// nothing fits).
bool surely_out_of_memory(const PendingCandidate& c, double cap, const std::optional<PlanCandidate>& lowest_peak) {
  return static_cast<double>(c.bounds.peak_bytes) > cap && lowest_peak &&
         lowest_peak->max_peak_bytes < c.bounds.peak_bytes;
}

// The candidates by their bound on the objective, best first; ties go by
// their place in the groups' order, so that the order never depends on
// the threads. Most are popped once and skipped: they are sorted once, and
// only those pushed back (their bound tightened) go through a heap.
class BoundQueue {
 public:
  BoundQueue(std::vector<PendingCandidate>& pending, Objective objective) : pending_(pending) {
    sorted_.reserve(pending.size());
    for (std::size_t i = 0; i < pending.size(); ++i) sorted_.push_back(entry(i, objective));
    std::sort(sorted_.begin(), sorted_.end());
    objective_ = objective;
  }
  bool empty() const { return next_ == sorted_.size() && heap_.empty(); }
  PendingCandidate& pop() {
    std::size_t index = 0;
    if (!heap_.empty() && (next_ == sorted_.size() || heap_.front() < sorted_[next_])) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      index = heap_.back().index;
      heap_.pop_back();
    } else {
      index = sorted_[next_++].index;
    }
    return pending_[index];
  }
  // Back in, at its new bound (a candidate popped before).
  void push(const PendingCandidate& candidate) {
    heap_.push_back(entry(static_cast<std::size_t>(&candidate - pending_.data()), objective_));
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }

 private:
  // The bound to order by, smallest first: the tokens per second, negated,
  // or the peak.
  struct Entry {
    double key;
    std::size_t index;
    auto operator<=>(const Entry&) const = default;
  };
  Entry entry(std::size_t index, Objective objective) const {
    const PendingCandidate& c = pending_[index];
    // The goodput's ceiling is the same for all: the tokens' bound orders them.
    return {objective == Objective::kMemory ? static_cast<double>(c.bounds.peak_bytes) : -c.tokens_bound, index};
  }
  std::vector<PendingCandidate>& pending_;
  Objective objective_ = Objective::kThroughput;
  std::vector<Entry> sorted_;
  std::size_t next_ = 0;
  std::vector<Entry> heap_;  // a min-heap
};

}  // namespace

PlanSearchResult search_plans(const PlanRequest& request, std::size_t top_k) {
  const auto start = std::chrono::steady_clock::now();
  const double cap =
      request.memory_cap_bytes > 0 ? request.memory_cap_bytes : static_cast<double>(request.hardware.gpu.usable_memory_bytes());
  PlanSearchResult result;
  result.memory_cap_bytes = cap;
  result.warnings = request_warnings(request);
  // A given split is checked here, once, so that workers never meet a bad one.
  if (request.layer_counts) step::split_from_counts(*request.layer_counts, request.model.layers);
  if (request.layout)
    step::split_from_layout(*request.layout, request.model.layers, step::layout_stage_count(*request.layout),
                            request.mtp_layers);
  const SearchSpace space(request);
  const std::vector<SearchGroup>& groups = space.groups();
  CandidateEvaluator evaluator(request, groups, cap);

  // Every candidate with its bounds, group by group.
  std::vector<std::vector<PendingCandidate>> per_group(groups.size());
  std::vector<SearchTally> tallies(groups.size());
  parallel_for(groups.size(), request.threads,
               [&](std::size_t g) { evaluator.enumerate_group(g, per_group[g], tallies[g]); });
  // Gathered into one vector sized once, each group's memory handed back as
  // it is moved: a million candidates are held once, not twice.
  std::size_t candidates = 0;
  for (const std::vector<PendingCandidate>& group : per_group) candidates += group.size();
  std::vector<PendingCandidate> pending;
  pending.reserve(candidates);
  std::vector<UnfittedCandidate> unfitted;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (PendingCandidate& candidate : per_group[g]) pending.push_back(std::move(candidate));
    std::vector<PendingCandidate>().swap(per_group[g]);
    for (const auto& [reason, count] : tallies[g].rejected) result.rejected[reason] += count;
    unfitted.insert(unfitted.end(), tallies[g].unfitted.begin(), tallies[g].unfitted.end());
  }
  for (const auto& [reason, count] : space.rejected()) result.rejected[reason] += count;

  // Best bound first: a candidate is bounded before its schedule is
  // generated, then, when its turn comes, for any split, then split and
  // bounded again, then replayed; at each turn, what cannot reach the top
  // or the front is skipped.
  const bool track_frameworks = request.framework == step::Framework::kAny;
  Pruner pruner(request.objective, top_k, request.objective == Objective::kGoodput ? goodput_ceiling(request) : 1.0,
                track_frameworks);
  BoundQueue queue(pending, request.objective);
  while (!queue.empty()) {
    std::vector<PendingCandidate*> to_schedule, to_split, to_replay;
    while (!queue.empty() && to_schedule.size() + to_split.size() + to_replay.size() < kBatch) {
      PendingCandidate& candidate = queue.pop();
      // An outline's peak is too loose to refuse a candidate on: the
      // closest to fitting may be among them.
      if (request.prune && candidate.scheduled && surely_out_of_memory(candidate, cap, result.lowest_peak)) {
        ++result.rejected["out of memory"];
      } else if (request.prune && pruner.skip(candidate)) {
        ++result.candidates_pruned;
      } else if (!candidate.scheduled) {
        to_schedule.push_back(&candidate);
      } else {
        (candidate.split ? to_replay : to_split).push_back(&candidate);
      }
    }
    std::vector<const char*> refused(to_schedule.size());
    std::vector<char> unfits(to_schedule.size());
    parallel_for(to_schedule.size(), request.threads, [&](std::size_t i) {
      bool unfitted_here = false;
      refused[i] = evaluator.schedule(*to_schedule[i], unfitted_here);
      unfits[i] = unfitted_here;
    });
    for (std::size_t i = 0; i < to_schedule.size(); ++i) {
      const PendingCandidate& candidate = *to_schedule[i];
      if (refused[i] == nullptr) {
        queue.push(candidate);
        continue;
      }
      ++result.rejected[refused[i]];
      if (unfits[i]) unfitted.push_back({candidate.group, candidate.layers, candidate.schedule});
    }
    parallel_for(to_split.size(), request.threads, [&](std::size_t i) { evaluator.choose_split(*to_split[i]); });
    for (PendingCandidate* candidate : to_split) {
      if (candidate->uniform_per_stage) {
        ++result.rejected["per-stage recompute that chose one setting for every stage (that setting's own candidate)"];
      } else {
        queue.push(*candidate);
      }
    }
    std::vector<PlanCandidate> replayed(to_replay.size());
    std::vector<char> redundant(to_replay.size());
    parallel_for(to_replay.size(), request.threads, [&](std::size_t i) {
      bool same = false;
      replayed[i] = evaluator.replay(*to_replay[i], same);
      redundant[i] = same;
    });
    for (std::size_t i = 0; i < replayed.size(); ++i) {
      PlanCandidate& candidate = replayed[i];
      if (redundant[i]) {
        ++result.rejected["an activation limit the cap already keeps to (the cap's own candidate)"];
        continue;
      }
      ++result.candidates_evaluated;
      // Ties go by the memory objective's order, whatever the replay order.
      if (!to_replay[i]->framework_only &&
          (!result.lowest_peak || better(candidate, *result.lowest_peak, Objective::kMemory))) {
        result.lowest_peak = candidate;
      }
      if (static_cast<double>(candidate.max_peak_bytes) > cap) {
        ++result.rejected["out of memory"];
        continue;
      }
      pruner.add(candidate, to_replay[i]->framework_only);
    }
  }
  result.ranked = pruner.ranked();
  result.pareto = pruner.front();
  result.framework_best = pruner.framework_best();
  if (!track_frameworks && !result.ranked.empty()) {
    result.framework_best[static_cast<std::size_t>(request.framework)] = result.ranked.front();
  }
  if (!result.ranked.empty()) add_runtime_warnings(request, result.ranked.front(), result.warnings);
  // With nothing under the cap, the closest the memory partitioner came,
  // the groups whose weights alone were over it included.
  if (result.ranked.empty()) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (!tallies[g].deferred) continue;
      std::vector<PendingCandidate> none;
      SearchTally all;
      evaluator.enumerate_group(g, none, all, false);
      unfitted.insert(unfitted.end(), all.unfitted.begin(), all.unfitted.end());
    }
  }
  const std::optional<PendingCandidate> leanest =
      result.ranked.empty() ? evaluator.closest_to_fitting(unfitted) : std::nullopt;
  if (leanest) {
    PlanCandidate closest = evaluator.replay(*leanest);
    if (!result.lowest_peak || closest.max_peak_bytes < result.lowest_peak->max_peak_bytes) {
      result.lowest_peak = std::move(closest);
    }
  }
  result.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace pipeplan::planner
