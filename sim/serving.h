// Serving one pipeline: requests arrive, a continuous-batching scheduler
// (vLLM's: chunked prefill under a token budget, a paged KV cache, the
// latest-admitted request preempted and recomputed when the cache is full)
// forms batches, and each batch runs through the stages (compute
// resources) and over the boundaries (links) in the engine's event queue.
// Up to `in_flight` batches are in the pipeline at once (vLLM runs as many
// as stages), and a request is in at most one of them: its next token
// needs the last one sampled.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/step_load.h"
#include "sim/kv_use_trace.h"
#include "sim/quantile_sketch.h"

namespace pipeplan::sim {

struct ServingRequest {
  double arrival_s = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;
};

// The pipeline's step costs (models::ServingStepModel behind an adapter).
class ServingCosts {
 public:
  virtual ~ServingCosts() = default;
  virtual int stages() const = 0;
  virtual double stage_s(int stage, const StepLoad& load) const = 0;
  virtual double hop_s(int boundary, const StepLoad& load) const = 0;
  virtual double return_s(const StepLoad& load) const = 0;
};

struct SchedulerLimits {
  int max_batch_tokens = 8192;  // vLLM's --max-num-batched-tokens
  // Requests running at once, in the pipeline or between its steps (vLLM
  // V1's --max-num-seqs: with p stages each batch holds about 1/p of them).
  int max_sequences = 256;
  std::int64_t kv_blocks = 0;   // the cache, in blocks
  int block_tokens = 16;        // tokens per block (vLLM's --block-size)
  int in_flight = 0;            // batches in the pipeline at once; 0: one per stage
};

// Open loop: requests arrive at their arrival_s. Closed loop (concurrency
// > 0): that many clients each send a request at time 0 and the next one as
// theirs completes, in the order given; arrival_s is ignored.
struct ServingWorkload {
  std::vector<ServingRequest> requests;
  int concurrency = 0;
};

// What happened to one request; times in seconds from 0.
struct RequestRecord {
  double arrival_s = 0;
  double first_token_s = 0;
  double finish_s = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;
  int preemptions = 0;
};

// One batch's time on one stage, for the trace.
struct StageSpan {
  int replica = 0;  // set by whoever runs several pipelines
  int stage = 0;
  std::int64_t batch = 0;
  double start_s = 0;
  double end_s = 0;
  int tokens = 0;
  int sequences = 0;
};

struct ServingRun {
  std::vector<RequestRecord> requests;  // in the workload's order
  // Every gap between two output tokens of a request, sketched: its
  // quantiles within 0.1 %, its count and sum exact, in bounded memory.
  QuantileSketch token_gaps_s;
  std::vector<double> stage_busy_s;     // per stage
  double first_arrival_s = 0;
  double end_s = 0;                     // the last request's finish
  double active_s = 0;                  // time with a request arrived and not finished
  std::int64_t batches = 0;
  std::int64_t batch_tokens = 0;        // summed over batches
  std::int64_t preemptions = 0;
  std::int64_t kv_blocks = 0;
  // The cache's use after each batch completes.
  KvUseTrace kv_used;
  std::vector<StageSpan> spans;         // with record_spans only
};

// Throws InputError when a request could never fit the cache or the limits
// are not positive; deterministic for a given input.
ServingRun simulate_serving(const ServingWorkload& workload, const ServingCosts& costs, const SchedulerLimits& limits,
                            bool record_spans = false);

}  // namespace pipeplan::sim
