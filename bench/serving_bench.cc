// The serving simulation at scale: 100,000 requests through an 8-stage
// pipeline (Llama 3 70B, t=1 p=8 on H100s), step costs from the cost model.
#include <benchmark/benchmark.h>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/serving_costs.h"
#include "planner/serve/serving_step_costs.h"
#include "sim/serving.h"
#include "sim/serving_metrics.h"
#include "sim/serving_workload.h"

namespace {

using namespace pipeplan;


// range(0) requests at 10 per second (the pipeline's sustained rate is
// about 11): the cache fills, batches reach a few hundred sequences. Each
// iteration costs a fresh model, its step costs memoized as they come.
void BM_ServingSimulation(benchmark::State& state) {
  const models::ModelConfig model = models::load_model("llama3-70b");
  const models::HardwareConfig hardware = models::load_hardware("h100-sxm");
  const auto requests = sim::draw_requests(static_cast<int>(state.range(0)), 10, {128, 1024}, {32, 256}, 1);
  sim::SchedulerLimits limits;
  limits.kv_blocks = 60'000;
  std::int64_t tokens = 0;
  for (auto _ : state) {
    models::ServingLayout layout;
    layout.tp = 1;
    layout.stage_layers = models::even_stage_layers(model.layers, 8);
    const models::ServingStepModel steps(model, hardware, layout);
    const planner::ServingStepCosts costs(steps);
    const sim::ServingRun run = sim::simulate_serving({requests, 0}, costs, limits);
    const sim::ServingSummary summary = sim::summarize_serving({run});
    benchmark::DoNotOptimize(summary.tpot_s.p99);
    tokens = run.batch_tokens;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_ServingSimulation)->ArgName("requests")->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
