// The execution loop of one rank, the same on every backend: the gradient
// check (one iteration against the unpipelined reference), warm-up, then
// measured iterations, each started together with the other ranks and
// measured for time and memory.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "common/error.h"
#include "validate/gradient_check.h"
#include "validate/rank_execution.h"
#include "validate/stage_runner.h"
#include "validate/transport.h"

namespace pipeplan::validate::detail {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void check_settings(const ExecutionSettings& settings) {
  if (settings.iterations < 1 || settings.warmup < 0) throw InputError("--iterations must be >= 1 and --warmup >= 0");
}

// Runs one iteration started together with the other ranks; times are
// from this rank's exit of the barrier.
template <class Backend>
std::vector<RunRecord> timed_iteration(BasicStageRunner<Backend>& runner, const sim::Schedule& lowered,
                                       Transport& transport, typename Backend::Channel& channel) {
  transport.barrier();
  const double start = now_s();
  return runner.run_iteration(lowered, channel, [start] { return now_s() - start; });
}

template <class Backend>
void check_gradients(BasicStageRunner<Backend>& runner, const models::ModelConfig& model,
                     const models::TrainingShape& shape, const sim::Schedule& lowered, Transport& transport,
                     typename Backend::Channel& channel, const ExecutionSettings& settings, RankResult& result) {
  runner.zero_gradients();
  timed_iteration(runner, lowered, transport, channel);
  ReferenceRun reference = run_reference(model, shape, lowered.microbatches, settings.seed, Backend::kBf16Weights);
  result.gradients = runner.compare_gradients(reference);
  result.reference_loss = reference.loss;
  result.loss = runner.loss();
  runner.zero_gradients();
}

// `transport` carries the control messages (barriers), `channel` the
// tensors between stages (the transport itself on the CPU backend).
template <class Backend>
RankResult run_rank(BasicStageRunner<Backend>& runner, const models::ModelConfig& model,
                    const models::TrainingShape& shape, const sim::Schedule& lowered, Transport& transport,
                    typename Backend::Channel& channel, const ExecutionSettings& settings) {
  RankResult result;
  result.rank = transport.rank();
  result.parameter_bytes = runner.parameter_bytes();
  result.holds_loss = runner.holds_loss();
  const std::size_t steps = (settings.check_gradients ? 1u : 0u) + static_cast<std::size_t>(settings.warmup) +
                            static_cast<std::size_t>(settings.iterations);
  std::size_t step = 0;
  if (settings.check_gradients) {
    report(settings.progress, step++, steps, "gradient check");
    check_gradients(runner, model, shape, lowered, transport, channel, settings, result);
  }
  for (int i = 0; i < settings.warmup; ++i) {
    report(settings.progress, step++, steps, fmt::format("warm-up iteration {}", i + 1));
    timed_iteration(runner, lowered, transport, channel);
  }
  if (settings.stall_rank == transport.rank()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(settings.stall_s));
  }
  for (int i = 0; i < settings.iterations; ++i) {
    report(settings.progress, step++, steps, fmt::format("iteration {} of {}", i + 1, settings.iterations));
    runner.zero_gradients();
    transport.barrier();
    const typename Backend::MemoryProbe probe = runner.backend().memory_probe();
    const double start = now_s();
    result.iterations.push_back(runner.run_iteration(lowered, channel, [start] { return now_s() - start; }));
    result.peak_heap_bytes = std::max(result.peak_heap_bytes, probe.peak_above_start());
    result.peak_held_bytes = std::max(result.peak_held_bytes, runner.peak_held_bytes());
  }
  if (!settings.check_gradients) result.loss = runner.loss();
  report(settings.progress, steps, steps, "iterations done");
  return result;
}

}  // namespace pipeplan::validate::detail
