// The cost model's speed: expanding a model into its layers and costing
// every layer on a GPU, as the planner does for each configuration.
#include <benchmark/benchmark.h>

#include "models/hardware.h"
#include "models/layers.h"
#include "models/time_model.h"
#include "step/layer_table.h"

namespace pipeplan::models {
namespace {

// 8192 tokens at t = 8 with sequence parallelism and selective recompute.
TrainingShape bench_shape() {
  TrainingShape shape;
  shape.seq_len = 8192;
  shape.tp = 8;
  shape.sequence_parallel = true;
  shape.recompute = Recompute::kSelective;
  return shape;
}

void BM_ExpandAndCostLayers(benchmark::State& state, const char* model_name) {
  const ModelConfig model = load_model(model_name);
  const HardwareConfig hardware = load_hardware("h100-sxm");
  const TrainingShape shape = bench_shape();
  for (auto _ : state) {
    const ModelLayers layers = expand_layers(model, shape);
    double total = 0;
    for (const LayerCost& layer : layers.layers) {
      const LayerTimes times = layer_times(layer, hardware, shape);
      total += times.forward_s + times.backward_input_s + times.backward_weight_s;
    }
    benchmark::DoNotOptimize(total);
  }
  state.counters["layers"] = static_cast<double>(model.layers + 2);
}

// What the planner builds per candidate layout: the layers expanded and
// costed into prefix sums (alike blocks costed once).
void BM_LayerTable(benchmark::State& state, const char* model_name) {
  const ModelConfig model = load_model(model_name);
  const HardwareConfig hardware = load_hardware("h100-sxm");
  const TrainingShape shape = bench_shape();
  for (auto _ : state) {
    const ModelLayers layers = expand_layers(model, shape);
    const step::LayerTable table(layers, hardware, shape);
    benchmark::DoNotOptimize(table.time_s(0, table.size()));
  }
}

BENCHMARK_CAPTURE(BM_LayerTable, llama3_1_405b, "llama3.1-405b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpandAndCostLayers, llama3_70b, "llama3-70b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpandAndCostLayers, llama3_1_405b, "llama3.1-405b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpandAndCostLayers, deepseek_v3, "deepseek-v3")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace pipeplan::models
