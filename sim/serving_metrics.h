// A serving run reduced to what users compare: throughput, the latency
// distributions (time to first token, time per output token, inter-token
// latency, end to end), the KV cache's use and the pipeline bubble, over
// one or more replicas of the pipeline.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/serving.h"

namespace pipeplan::sim {

struct Percentiles {
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};
// Linear interpolation between order statistics (numpy's default); zeros
// for no samples.
Percentiles percentiles(std::vector<double> samples);

struct ServingSummary {
  int requests = 0;
  double duration_s = 0;  // first arrival to last finish, the longest replica's
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;  // prompt and output
  Percentiles ttft_s;
  Percentiles tpot_s;  // per request: (finish - first token) / (output - 1), requests of 2 tokens or more
  Percentiles itl_s;   // every gap between two tokens
  Percentiles e2e_s;
  double kv_mean_use = 0;  // of the cache, time-weighted while requests are in the system
  double kv_peak_use = 0;
  // Of the time with requests in the system, the share a stage sits idle:
  // per stage (averaged over replicas), and their mean.
  std::vector<double> stage_idle;
  double bubble = 0;
  std::int64_t preemptions = 0;
  double mean_batch_tokens = 0;
  std::vector<std::pair<double, double>> kv_use;  // (time, share of the cache), first replica, at most 400 points
};

ServingSummary summarize_serving(const std::vector<ServingRun>& replicas);

}  // namespace pipeplan::sim
