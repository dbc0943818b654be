// The CPU backend's passes: one GPT-2 small block (h = 768, 12 heads,
// GELU MLP) at 128 tokens, F, I and W timed separately; items are FLOPs,
// so items_per_second is the FLOP rate the profiler reports.
#include <benchmark/benchmark.h>

#include <random>

#include "models/model_config.h"
#include "profiler/cpu/model_builder.h"

namespace {

using pipeplan::profiler::Layer;
using pipeplan::profiler::Matrix;

struct Block {
  pipeplan::models::ModelConfig model = pipeplan::models::load_model("gpt2-small");
  pipeplan::models::TrainingShape shape;
  std::vector<std::unique_ptr<Layer>> layers;
  Matrix input, grad;
  Block() {
    shape.seq_len = 128;
    layers = pipeplan::profiler::build_cpu_layers(model, shape, 1, 2, {1234, 1});
    std::mt19937 generator(7);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    input.resize(shape.seq_len, model.hidden);
    grad.resize(shape.seq_len, model.hidden);
    for (Eigen::Index i = 0; i < input.size(); ++i) input.data()[i] = value(generator);
    for (Eigen::Index i = 0; i < grad.size(); ++i) grad.data()[i] = value(generator);
  }
  Layer& layer() { return *layers.front(); }
};

// Pass 0: F; 1: I (after an untimed F); 2: W (after untimed F and I).
void BM_CpuBlockPass(benchmark::State& state) {
  Block block;
  const int pass = static_cast<int>(state.range(0));
  const int tokens = block.shape.seq_len;
  int mb = 0;
  for (auto _ : state) {
    if (pass == 0) {
      benchmark::DoNotOptimize(block.layer().forward(mb, block.input));
      state.PauseTiming();
      block.layer().backward_input(mb, block.grad);
      block.layer().backward_weight(mb);
      state.ResumeTiming();
    } else if (pass == 1) {
      state.PauseTiming();
      block.layer().forward(mb, block.input);
      state.ResumeTiming();
      benchmark::DoNotOptimize(block.layer().backward_input(mb, block.grad));
      state.PauseTiming();
      block.layer().backward_weight(mb);
      state.ResumeTiming();
    } else {
      state.PauseTiming();
      block.layer().forward(mb, block.input);
      block.layer().backward_input(mb, block.grad);
      state.ResumeTiming();
      block.layer().backward_weight(mb);
    }
    ++mb;
  }
  const double flops = pass == 0   ? block.layer().forward_flops(tokens)
                       : pass == 1 ? block.layer().backward_input_flops(tokens)
                                   : block.layer().backward_weight_flops(tokens);
  state.SetItemsProcessed(static_cast<std::int64_t>(flops) * state.iterations());
  state.SetLabel(pass == 0 ? "F" : (pass == 1 ? "I" : "W"));
}
BENCHMARK(BM_CpuBlockPass)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace
