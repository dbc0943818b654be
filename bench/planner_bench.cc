// The plan search's speed: whole searches, with the exact pruning and
// without it (every candidate replayed; small problems only), on one core.
// Counters: candidates replayed and skipped by their bounds per search, and
// per second of the search on its one core (costed: bounded, replayed or
// both).
#include <benchmark/benchmark.h>

#include "models/cluster.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/mixed/mixed_search.h"
#include "planner/search/plan_search.h"

namespace pipeplan::planner {
namespace {

PlanRequest request(const char* model, int gpus, int global_batch, int seq) {
  PlanRequest r;
  r.model = models::load_model(model);
  r.hardware = models::load_hardware("h100-sxm");
  r.gpus = gpus;
  r.global_batch = global_batch;
  r.seq_len = seq;
  r.threads = 1;
  return r;
}

void BM_PlanSearch(benchmark::State& state, const char* model, int gpus, int global_batch, int seq) {
  PlanRequest r = request(model, gpus, global_batch, seq);
  r.prune = state.range(0) != 0;
  std::size_t replayed = 0, pruned = 0;
  double seconds = 0;
  for (auto _ : state) {
    const PlanSearchResult result = search_plans(r, 5);
    replayed += result.candidates_evaluated;
    pruned += result.candidates_pruned;
    seconds += result.search_time_s;
    benchmark::DoNotOptimize(result.ranked.data());
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["replayed"] = static_cast<double>(replayed) / iterations;
  state.counters["pruned"] = static_cast<double>(pruned) / iterations;
  state.counters["costed_per_s"] = static_cast<double>(replayed + pruned) / seconds;
  state.counters["replayed_per_s"] = static_cast<double>(replayed) / seconds;
}

void pruning(benchmark::internal::Benchmark* b) { b->ArgName("prune")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond); }
void pruned_only(benchmark::internal::Benchmark* b) { b->ArgName("prune")->Arg(1)->Unit(benchmark::kMillisecond); }

BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_8gpus_batch16_seq4096, "llama3-70b", 8, 16, 4096)->Apply(pruning);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_32gpus_batch32, "llama3-70b", 32, 32, 8192)->Apply(pruned_only);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_64gpus_batch128, "llama3-70b", 64, 128, 8192)->Apply(pruned_only);
BENCHMARK_CAPTURE(BM_PlanSearch, gpt3_175b_256gpus_batch512, "gpt3-175b", 256, 512, 2048)->Apply(pruned_only);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_64gpus_batch4096, "llama3-70b", 64, 4096, 8192)->Apply(pruned_only);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_1_405b_16384gpus_batch2048, "llama3.1-405b", 16384, 2048, 8192)
    ->Apply(pruned_only);
// The expert axis: DeepSeek-V3 on 2,048 GPUs searches ep and etp with the rest.
BENCHMARK_CAPTURE(BM_PlanSearch, deepseek_v3_2048gpus_batch8192, "deepseek-v3", 2048, 8192, 4096)->Apply(pruned_only);

// A cluster of two GPU kinds (each kind alone, and stages over both)
// against the homogeneous search on as many GPUs of one kind.
void BM_MixedPlanSearch(benchmark::State& state, const char* model, int global_batch, int seq) {
  const models::ClusterConfig cluster = models::load_cluster("mixed-h100-a100");
  PlanRequest r = request(model, cluster.gpus(), global_batch, seq);
  std::size_t replayed = 0, pruned = 0;
  for (auto _ : state) {
    const MixedSearchResult result = search_mixed_plans(r, cluster, 5);
    replayed += result.evaluated;
    pruned += result.pruned;
    benchmark::DoNotOptimize(result.ranked.data());
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["replayed_over_kinds"] = static_cast<double>(replayed) / iterations;
  state.counters["pruned_over_kinds"] = static_cast<double>(pruned) / iterations;
}

BENCHMARK_CAPTURE(BM_MixedPlanSearch, llama3_8b_64gpus_batch256, "llama3-8b", 256, 4096)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MixedPlanSearch, llama3_70b_64gpus_batch256, "llama3-70b", 256, 4096)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_8b_64gpus_batch256, "llama3-8b", 64, 256, 4096)->Apply(pruned_only);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_64gpus_batch256, "llama3-70b", 64, 256, 4096)->Apply(pruned_only);

}  // namespace
}  // namespace pipeplan::planner
