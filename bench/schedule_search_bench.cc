// Schedule search: the zero-bubble heuristic's speed on the paper's 14.6B
// setting (p = 16, m = 64, its eight variants each replayed on the engine),
// and its gap to the branch-and-bound optimum on small pipelines, reported
// as counters (gap_mean, gap_max: heuristic cost / optimum - 1); and the
// V schedules built from blocks (V-Min, V-Half) against ZBV's generator.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <limits>

#include "sim/generators/registry.h"
#include "sim/search/exact_schedule_search.h"
#include "sim/search/zero_bubble_search.h"

namespace pipeplan::sim {
namespace {

// Equal stages, but for the last, whose F and I take `last_scale` times
// as long (the output layer and loss).
ZeroBubbleSearchRequest uniform_request(int p, int m, double tf, double tb, double tw, double tcomm,
                                        int forwards_held, double last_scale = 1.0) {
  ZeroBubbleSearchRequest request;
  request.microbatches = m;
  const std::int64_t activation = 1000;
  for (int stage = 0; stage < p; ++stage) request.costs.stages.push_back({tf, tb, tw, activation, 400, 0, 0});
  request.costs.stages.back().forward_s *= last_scale;
  request.costs.stages.back().backward_input_s *= last_scale;
  request.costs.static_bytes.assign(static_cast<std::size_t>(p), 0);
  request.topology.intra_node.latency_s = tcomm;
  request.memory_limit_bytes = {forwards_held * activation};
  return request;
}

// Zero Bubble's 14.6B row (Table 5/9): p 16, m 64, within 2p M_B.
void BM_ZeroBubbleSearch(benchmark::State& state) {
  const ZeroBubbleSearchRequest request =
      uniform_request(16, 64, 11.307e-3, 11.254e-3, 8.101e-3, 0.379e-3, static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(search_zero_bubble(request));
}
BENCHMARK(BM_ZeroBubbleSearch)->Arg(16)->Arg(32)->Unit(benchmark::kMillisecond);

// p 2..4, m p..2p, four F:I:W mixes (one with a slower last stage), limits
// p and 2p forwards: the
// heuristic against the proven optimum (cases the node budget leaves
// unproven are counted apart and left out of the gap).
void BM_HeuristicGap(benchmark::State& state) {
  struct Mix {
    double tf, tb, tw, tcomm, last_scale;
  };
  const Mix mixes[] = {{1.0, 1.0, 1.0, 0.0, 1.0}, {1.0, 1.0, 0.5, 0.05, 1.0}, {1.0, 1.3, 0.7, 0.1, 1.0},
                       {1.0, 1.0, 0.5, 0.05, 1.5}};
  for (auto _ : state) {
    double gap_sum = 0, gap_max = 0;
    int proven = 0, unproven = 0;
    for (int p = 2; p <= 4; ++p) {
      for (int m = p; m <= 2 * p; ++m) {
        for (const Mix& mix : mixes) {
          for (const int held : {p, 2 * p}) {
            const ZeroBubbleSearchRequest request = uniform_request(p, m, mix.tf, mix.tb, mix.tw, mix.tcomm, held, mix.last_scale);
            const double heuristic = search_zero_bubble(request).report.cost_s;
            const ExactSearchResult exact = search_exact_schedule(request, heuristic, 2'000'000);
            if (!exact.proven) {
              ++unproven;
              continue;
            }
            const double optimum = exact.schedule.ranks > 0 ? exact.cost_s : heuristic;
            const double gap = heuristic / optimum - 1;
            gap_sum += gap;
            gap_max = std::max(gap_max, gap);
            ++proven;
          }
        }
      }
    }
    state.counters["cases"] = proven;
    state.counters["unproven"] = unproven;
    state.counters["gap_mean"] = proven > 0 ? gap_sum / proven : 0;
    state.counters["gap_max"] = gap_max;
  }
}
BENCHMARK(BM_HeuristicGap)->Iterations(1)->Unit(benchmark::kSecond);

void BM_GenerateVSchedule(benchmark::State& state, const char* name) {
  const PipelineShape shape{static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), 2, 0};
  for (auto _ : state) benchmark::DoNotOptimize(generate_schedule(name, shape));
}
void v_shapes(benchmark::internal::Benchmark* bench) {
  bench->Args({16, 64})->Args({32, 1024})->Unit(benchmark::kMillisecond);
}
BENCHMARK_CAPTURE(BM_GenerateVSchedule, VMin, "VMin")->Apply(v_shapes);
BENCHMARK_CAPTURE(BM_GenerateVSchedule, VHalf, "VHalf")->Apply(v_shapes);
BENCHMARK_CAPTURE(BM_GenerateVSchedule, ZBV, "ZBV")->Apply(v_shapes);

}  // namespace
}  // namespace pipeplan::sim
