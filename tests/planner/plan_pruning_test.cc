// Pruning in the plan search is exact: on a range of problems the pruned
// search reports the same top, Pareto front and lowest peak as the search
// that replays every candidate, and every candidate's bounds hold against
// its replay (no step faster, no peak lower than bounded).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/search/candidate_evaluator.h"
#include "planner/search/plan_search.h"
#include "planner/search/search_space.h"

namespace pipeplan::planner {
namespace {

struct Problem {
  std::string label;
  PlanRequest request;
};

PlanRequest base(const std::string& model, int gpus, int global_batch, int seq_len) {
  PlanRequest request;
  std::tie(request.gpus, request.global_batch, request.seq_len, request.threads) =
      std::make_tuple(gpus, global_batch, seq_len, 2);
  request.model = models::load_model(model);
  request.hardware = models::load_hardware("h100-sxm");
  return request;
}

std::vector<Problem> problems() {
  std::vector<Problem> list;
  list.push_back({"llama3-70b on 32", base("llama3-70b", 32, 32, 8192)});
  list.push_back({"llama3-8b on 16", base("llama3-8b", 16, 64, 4096)});
  list.push_back({"gpt3-175b on 64", base("gpt3-175b", 64, 128, 2048)});
  list.push_back({"megatron-22b on 24 (part node)", base("megatron-22b", 24, 48, 2048)});
  {
    Problem p{"llama3-70b under a 40 GiB cap", base("llama3-70b", 32, 64, 4096)};
    p.request.memory_cap_bytes = 40.0 * (1LL << 30);
    list.push_back(p);
  }
  {
    Problem p{"llama3-70b, nothing fits in 8 GiB", base("llama3-70b", 16, 16, 8192)};
    p.request.memory_cap_bytes = 8.0 * (1LL << 30);
    list.push_back(p);
  }
  {
    Problem p{"llama3-8b, objective memory", base("llama3-8b", 16, 64, 4096)};
    p.request.objective = Objective::kMemory;
    list.push_back(p);
  }
  {
    // Restarts that load slowly: the ranking by goodput differs from the
    // one by tokens/s, and the search prunes with the goodput's ceiling.
    Problem p{"llama3-70b, objective goodput", base("llama3-70b", 32, 64, 4096)};
    p.request.objective = Objective::kGoodput;
    p.request.hardware.reliability.storage_read_total = 2e9;
    p.request.hardware.reliability.gpu_mtbf_s = 2e6;
    list.push_back(p);
  }
  {
    Problem p{"gpt3-175b, time split", base("gpt3-175b", 64, 128, 2048)};
    p.request.partition = step::PartitionMethod::kTime;
    list.push_back(p);
  }
  {
    Problem p{"llama3-8b, uniform split", base("llama3-8b", 16, 64, 4096)};
    p.request.partition = step::PartitionMethod::kUniform;
    list.push_back(p);
  }
  {
    Problem p{"llama3-70b, interleaved only", base("llama3-70b", 32, 64, 4096)};
    p.request.schedule = "Interleaved1F1B";
    list.push_back(p);
  }
  {
    Problem p{"mixtral-8x7b on 32", base("mixtral-8x7b", 32, 64, 4096)};
    list.push_back(p);
  }
  {
    Problem p{"llama3-8b on a100, no data parallelism", base("llama3-8b", 8, 32, 2048)};
    p.request.hardware = models::load_hardware("a100-80gb");
    p.request.dp = 1;
    list.push_back(p);
  }
  return list;
}

void expect_same(const PlanCandidate& a, const PlanCandidate& b, const std::string& where) {
  EXPECT_EQ(a.schedule, b.schedule) << where;
  EXPECT_EQ(a.virtual_stages, b.virtual_stages) << where;
  EXPECT_EQ(a.tp, b.tp) << where;
  EXPECT_EQ(a.pp, b.pp) << where;
  EXPECT_EQ(a.ep, b.ep) << where;
  EXPECT_EQ(a.etp, b.etp) << where;
  EXPECT_EQ(a.micro_batch_size, b.micro_batch_size) << where;
  EXPECT_EQ(a.recompute, b.recompute) << where;
  EXPECT_EQ(a.split, b.split) << where;
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s) << where;
  EXPECT_EQ(a.max_peak_bytes, b.max_peak_bytes) << where;
}

void expect_same(const std::vector<PlanCandidate>& a, const std::vector<PlanCandidate>& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t i = 0; i < a.size(); ++i) expect_same(a[i], b[i], where + " #" + std::to_string(i));
}

TEST(PlanPruning, PrunedSearchReportsWhatTheFullSearchReports) {
  std::size_t pruned_somewhere = 0;
  for (const Problem& problem : problems()) {
    for (std::size_t top : {std::size_t{1}, std::size_t{5}}) {
      PlanRequest request = problem.request;
      request.prune = false;
      const PlanSearchResult full = search_plans(request, top);
      request.prune = true;
      const PlanSearchResult pruned = search_plans(request, top);
      const std::string where = problem.label + ", top " + std::to_string(top);
      expect_same(full.ranked, pruned.ranked, where + " ranked");
      expect_same(full.pareto, pruned.pareto, where + " pareto");
      ASSERT_EQ(full.lowest_peak.has_value(), pruned.lowest_peak.has_value()) << where;
      if (full.lowest_peak) expect_same(*full.lowest_peak, *pruned.lowest_peak, where + " lowest peak");
      EXPECT_EQ(full.candidates_pruned, 0u) << where;
      // A pruned candidate is one the full search replayed or refused when
      // it generated its schedule (preconditions, or no split fits).
      const auto refused = [&](const char* reason) {
        const auto found = full.rejected.find(reason);
        return found == full.rejected.end() ? std::size_t{0} : found->second;
      };
      EXPECT_LE(pruned.candidates_evaluated, full.candidates_evaluated) << where;
      EXPECT_LE(pruned.candidates_evaluated + pruned.candidates_pruned,
                full.candidates_evaluated + refused("schedule precondition (micro-batches, chunks)") +
                    refused("out of memory"))
          << where;
      pruned_somewhere += pruned.candidates_pruned;
    }
  }
  // The mechanism is exercised, not vacuously exact.
  EXPECT_GT(pruned_somewhere, 100u);
}

TEST(PlanPruning, BoundsHoldForEveryCandidate) {
  for (const Problem& problem : problems()) {
    const PlanRequest& request = problem.request;
    const double cap = request.memory_cap_bytes > 0 ? request.memory_cap_bytes
                                                    : static_cast<double>(request.hardware.gpu.usable_memory_bytes());
    const SearchSpace space(request);
    CandidateEvaluator evaluator(request, space.groups(), cap);
    std::size_t checked = 0;
    std::vector<UnfittedCandidate> unfitted;
    for (std::size_t g = 0; g < space.groups().size(); ++g) {
      std::vector<PendingCandidate> pending;
      SearchTally tally;
      evaluator.enumerate_group(g, pending, tally);
      unfitted.insert(unfitted.end(), tally.unfitted.begin(), tally.unfitted.end());
      if (tally.deferred) {
        // Its weights alone are over the cap: enumerated in full, nothing of it fits.
        std::vector<PendingCandidate> none;
        SearchTally all;
        evaluator.enumerate_group(g, none, all, false);
        EXPECT_TRUE(none.empty()) << problem.label;
        unfitted.insert(unfitted.end(), all.unfitted.begin(), all.unfitted.end());
      }
      for (PendingCandidate& candidate : pending) {
        // Bounds before the schedule, for any split, then for the split
        // chosen: each below the next.
        EXPECT_FALSE(candidate.scheduled);
        EXPECT_FALSE(candidate.split);
        const step::StepBounds unscheduled = candidate.bounds;
        const double unscheduled_tokens = candidate.tokens_bound;
        bool unfitted_here = false;
        if (evaluator.schedule(candidate, unfitted_here) != nullptr) {
          if (unfitted_here) unfitted.push_back({candidate.group, candidate.layers, candidate.schedule});
          continue;
        }
        EXPECT_LE(unscheduled.iteration_time_s, candidate.bounds.iteration_time_s);
        EXPECT_LE(unscheduled.peak_bytes, candidate.bounds.peak_bytes);
        EXPECT_GE(unscheduled_tokens, candidate.tokens_bound);
        const step::StepBounds any_split = candidate.bounds;
        const double any_split_tokens = candidate.tokens_bound;
        evaluator.choose_split(candidate);
        // Per-stage recomputation that chose one setting everywhere is that
        // setting's candidate, dropped.
        if (candidate.uniform_per_stage) continue;
        EXPECT_LE(any_split.iteration_time_s, candidate.bounds.iteration_time_s);
        EXPECT_LE(any_split.peak_bytes, candidate.bounds.peak_bytes);
        EXPECT_GE(any_split_tokens, candidate.tokens_bound);
        const PlanCandidate replayed = evaluator.replay(candidate);
        const std::string where = problem.label + ": " + replayed.schedule + " v" +
                                  std::to_string(replayed.virtual_stages) + " t" + std::to_string(replayed.tp) + " ep" +
                                  std::to_string(replayed.ep) + " etp" + std::to_string(replayed.etp) + " p" +
                                  std::to_string(replayed.pp) + " b" + std::to_string(replayed.micro_batch_size);
        EXPECT_LE(candidate.bounds.iteration_time_s, replayed.iteration_time_s) << where;
        EXPECT_LE(candidate.bounds.peak_bytes, replayed.max_peak_bytes) << where;
        EXPECT_GE(candidate.tokens_bound, replayed.tokens_per_s) << where;
        EXPECT_GT(candidate.bounds.iteration_time_s, 0) << where;
        EXPECT_GT(candidate.bounds.peak_bytes, 0) << where;
        ++checked;
      }
    }
    EXPECT_GT(checked + unfitted.size(), 0u) << problem.label;
    // What was refused before any split does not fit with the leanest one.
    if (const std::optional<PendingCandidate> closest = evaluator.closest_to_fitting(unfitted)) {
      EXPECT_GT(static_cast<double>(evaluator.replay(*closest).max_peak_bytes), cap) << problem.label;
    }
  }
}

}  // namespace
}  // namespace pipeplan::planner
