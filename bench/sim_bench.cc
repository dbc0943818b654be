// Simulator speed. "actions" counts every action of the lowered schedule
// (compute and SEND/RECV); items_per_second is actions simulated per second.
#include <benchmark/benchmark.h>

#include "sim/engine.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/memory_observer.h"
#include "sim/simulate.h"
#include "sim/usage_observer.h"

namespace pipeplan::sim {
namespace {

struct Case {
  Schedule schedule;
  Schedule lowered;
  PipelineCosts costs;
  Topology topology;
};

Case make_case(const char* name, const benchmark::State& state) {
  Case c;
  c.schedule = generate_schedule(name, {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), 0, 0});
  c.lowered = lower_communication(c.schedule, RecvPlacement::kBeforeUse);
  RankCosts costs;
  costs.forward_s = {18.522e-3};
  costs.backward_input_s = {18.086e-3};
  costs.backward_weight_s = {9.337e-3};
  costs.activation_bytes = {1 << 30};
  costs.weight_grad_bytes = {1 << 28};
  costs.send_bytes = {64 << 20};
  c.costs = expand_rank_costs(costs, c.schedule);
  c.topology.intra_node = {0.601e-3, 450e9};
  return c;
}

void count_actions(benchmark::State& state, const Case& c) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(c.lowered.action_count()));
  state.counters["actions"] = static_cast<double>(c.lowered.action_count());
}

// The engine alone replaying a lowered schedule with communication, with the
// usage and memory observers that simulate() always attaches.
void BM_EngineReplay(benchmark::State& state, const char* name) {
  const Case c = make_case(name, state);
  for (auto _ : state) {
    UsageObserver usage(c.schedule.ranks, c.schedule.stages);
    MemoryObserver memory(c.costs, c.schedule.ranks, false);
    EngineObserver* observers[] = {&usage, &memory};
    benchmark::DoNotOptimize(run_engine(c.lowered, c.costs, c.topology, {}, observers));
  }
  count_actions(state, c);
}

// What a planner pays per candidate: the program-order replay with queued
// links, no validation and no critical path.
void BM_SimulateUnchecked(benchmark::State& state, const char* name) {
  const Case c = make_case(name, state);
  SimulationOptions options;
  options.validate = false;
  options.compute_critical_path = false;
  for (auto _ : state) benchmark::DoNotOptimize(simulate(c.schedule, c.costs, c.topology, options));
  count_actions(state, c);
}

// `pipeplan simulate`: the replay that validates (a stall is a deadlock)
// and the critical path.
void BM_SimulateFull(benchmark::State& state, const char* name) {
  const Case c = make_case(name, state);
  for (auto _ : state) benchmark::DoNotOptimize(simulate(c.schedule, c.costs, c.topology));
  count_actions(state, c);
}

void shapes(benchmark::internal::Benchmark* bench) {
  bench->Args({32, 256})->Args({128, 4096})->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_EngineReplay, 1F1B, "1F1B")->Apply(shapes);
BENCHMARK_CAPTURE(BM_EngineReplay, ZBH2, "ZBH2")->Apply(shapes);
BENCHMARK_CAPTURE(BM_SimulateUnchecked, 1F1B, "1F1B")->Apply(shapes);
BENCHMARK_CAPTURE(BM_SimulateUnchecked, ZBH2, "ZBH2")->Apply(shapes);
BENCHMARK_CAPTURE(BM_SimulateFull, 1F1B, "1F1B")->Apply(shapes);
BENCHMARK_CAPTURE(BM_SimulateFull, ZBH2, "ZBH2")->Apply(shapes);

}  // namespace
}  // namespace pipeplan::sim


