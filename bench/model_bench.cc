// The cost model's speed: expanding a model into its layers and costing
// every layer on a GPU, as the planner does for each configuration.
#include <benchmark/benchmark.h>

#include "models/hardware.h"
#include "models/layers.h"
#include "models/time_model.h"

namespace pipeplan::models {
namespace {

void BM_ExpandAndCostLayers(benchmark::State& state, const char* model_name) {
  const ModelConfig model = load_model(model_name);
  const HardwareConfig hardware = load_hardware("h100-sxm");
  TrainingShape shape;
  shape.micro_batch_size = 1;
  shape.seq_len = 8192;
  shape.tp = 8;
  shape.sequence_parallel = true;
  shape.recompute = Recompute::kSelective;
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

BENCHMARK_CAPTURE(BM_ExpandAndCostLayers, llama3_70b, "llama3-70b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpandAndCostLayers, llama3_1_405b, "llama3.1-405b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpandAndCostLayers, deepseek_v3, "deepseek-v3")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace pipeplan::models
