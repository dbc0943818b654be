// One rank's part of a validation run: build the layers of its stages, check
// the gradients of one iteration against the unpipelined reference if
// asked, then run warm-up and measured iterations, each started together
// with the other ranks, recording every action's real start and end and
// the memory the rank holds. The results travel to rank 0 as flat numbers.
// This is the CPU backend's entry; cuda/cuda_execution.h has the GPU's,
// and both run the same loop (rank_loop.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/progress.h"
#include "models/model_config.h"
#include "models/training_shape.h"
#include "sim/schedule.h"
#include "step/stage_split.h"
#include "validate/gradient_check.h"
#include "validate/stage_runner.h"
#include "validate/transport.h"

namespace pipeplan::validate {

struct ExecutionSettings {
  int warmup = 1;
  int iterations = 5;
  bool check_gradients = false;
  std::uint64_t seed = 1234;
  // Fault injection for tests of the failure path: this rank stops
  // answering for stall_s before its first measured iteration.
  int stall_rank = -1;
  double stall_s = 0;
  // Told before the gradient check, each warm-up and each measured iteration.
  ProgressFn progress;
};

struct RankResult {
  int rank = 0;
  std::vector<std::vector<RunRecord>> iterations;  // measured ones; times from each iteration's start
  std::int64_t parameter_bytes = 0;                // weights and gradients, as the backend stores them
  std::int64_t peak_held_bytes = 0;  // activations and unsent tensors, the most over the measured iterations
  // Allocator peak above each iteration's start, the most: the heap's on
  // the CPU backend, the device allocator's on the GPU.
  std::int64_t peak_heap_bytes = 0;
  bool holds_loss = false;  // this rank holds the output layer
  double loss = 0;          // of the last iteration
  std::optional<GradientCheck> gradients;
  double reference_loss = 0;
};

// `lowered` is the schedule with its communication (sim::lower_communication).
RankResult execute_rank(const models::ModelConfig& model, const models::TrainingShape& shape,
                        const sim::Schedule& lowered, const step::StageSplit& split, Transport& transport,
                        const ExecutionSettings& settings);

// Every rank's result on rank 0 (by rank); empty elsewhere.
std::vector<RankResult> gather_results(Transport& transport, const RankResult& mine);

// The flat form results travel in (exposed for round-trip tests).
std::vector<double> pack_result(const RankResult& result);
RankResult unpack_result(const std::vector<double>& values);

}  // namespace pipeplan::validate
