// The plan search's speed: candidates fully costed (split chosen, schedule
// replayed by the simulator) per second on one core, and whole searches.
#include <benchmark/benchmark.h>

#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/plan_search.h"

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

void BM_PlanSearch(benchmark::State& state, const char* model, int gpus, int global_batch) {
  const PlanRequest r = request(model, gpus, global_batch, 8192);
  std::size_t evaluated = 0;
  for (auto _ : state) {
    const PlanSearchResult result = search_plans(r, 5);
    evaluated += result.candidates_evaluated;
    benchmark::DoNotOptimize(result.ranked.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(evaluated));
  state.counters["candidates"] = static_cast<double>(evaluated) / static_cast<double>(state.iterations());
}

BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_32gpus_batch32, "llama3-70b", 32, 32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_70b_64gpus_batch256, "llama3-70b", 64, 256)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanSearch, llama3_1_405b_16384gpus_batch2048, "llama3.1-405b", 16384, 2048)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipeplan::planner
