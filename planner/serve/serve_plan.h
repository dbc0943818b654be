// Planning inference: which tensor- and pipeline-parallel layout, and how
// many replicas of it, serve a workload best on a number of GPUs. Each
// layout is checked for memory (weights, workspace, and what is left for
// the KV cache) and simulated (sim/serving.h) under the workload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "sim/serving.h"
#include "sim/serving_metrics.h"
#include "sim/serving_workload.h"

namespace pipeplan::planner {

// The requests: drawn (count, lengths, Poisson at `rate`, or a closed loop
// of `concurrency` clients), or a trace replayed as given.
struct ServeWorkload {
  int requests = 1000;
  std::optional<double> rate;  // requests per second
  int concurrency = 0;         // closed loop when > 0
  sim::LengthRange prompt{1024, 1024};
  sim::LengthRange output{256, 256};
  std::vector<sim::ServingRequest> trace;  // when not empty: replayed instead
  std::uint64_t seed = 1;
};

struct ServeOptions {
  models::ModelConfig model;
  models::HardwareConfig hardware;
  int gpus = 8;
  std::optional<int> tp, pp, replicas;  // fixed axes; the others searched
  bool fp8_weights = false;
  bool fp8_kv = false;
  double memory_utilization = 0.9;  // of each GPU's memory (vLLM's --gpu-memory-utilization)
  sim::SchedulerLimits limits;
  ServeWorkload workload;
  std::optional<double> ttft_p99_s, tpot_p99_s;
  bool record_spans = false;  // the chosen layout's batches on every stage of every replica, for --trace
  int threads = 0;
  ProgressFn progress;  // layouts simulated of all
};

// One GPU of a stage.
struct StageMemory {
  int layers = 0;
  std::int64_t weights = 0;
  std::int64_t workspace = 0;
  std::int64_t kv_cache = 0;  // what is left of the budget (negative: does not fit)
  std::int64_t kv_tokens = 0;
};

struct ServeCandidate {
  int tp = 1, pp = 1, replicas = 1;
  std::vector<StageMemory> stages;
  std::int64_t budget_bytes = 0;  // per GPU
  std::int64_t kv_blocks = 0;     // per pipeline
  std::string unfit;              // why it cannot run (empty: it can)
  // The rate simulated, or the highest found to meet the targets (0 where
  // none does; the summary is then the lowest rate's tried).
  double rate = 0;
  sim::ServingSummary summary;
  bool meets = false;  // the targets, where given
  std::vector<sim::StageSpan> spans;
};

// "t=4 p=2", with " x2" for replicas.
std::string layout_name(const ServeCandidate& candidate);

enum class ServeMode { kAtRate, kClosedLoop, kTrace, kHighestRate };

struct ServePlan {
  ServeMode mode = ServeMode::kAtRate;
  std::vector<ServeCandidate> candidates;  // ranked: the best first; those that cannot run last
};

// Throws InputError for bad options, a workload no layout can serve (too
// long for the context or for any KV cache), a model that fits no layout
// with an empty KV cache, or targets no layout meets (naming the best reached).
ServePlan plan_serving(const ServeOptions& options);

}  // namespace pipeplan::planner
