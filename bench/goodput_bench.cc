// Monte Carlo runs of a training job under failures (planner/goodput/run_monte_carlo.h):
// Llama 3.1 405B's plan on 16,384 H100s at Llama 3's failure rate, a 30-day
// job, checkpointed at Daly's interval.
#include <benchmark/benchmark.h>

#include "planner/goodput/run_monte_carlo.h"

namespace {

void BM_GoodputMonteCarlo(benchmark::State& state) {
  pipeplan::planner::RunModel model;
  model.work_s = 30 * 86400.0;
  model.interval_s = 45 * 5.505;  // 45 steps
  model.stall_s = 2.8;
  model.restart_s = 420;
  model.mtbf_s = 3.093 * 3600;
  model.weibull_shape = state.range(1) == 0 ? 1.0 : 0.7;
  for (auto _ : state) {
    const auto runs = pipeplan::planner::simulate_runs(model, static_cast<int>(state.range(0)), 1, 1);
    benchmark::DoNotOptimize(runs.mean_s);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GoodputMonteCarlo)->ArgNames({"runs", "weibull"})->Args({10000, 0})->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
