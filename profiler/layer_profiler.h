// Measuring a model's layers: for each layer kind (embedding, transformer
// block, output layer) and each micro-batch shape, the forward,
// input-gradient and weight-gradient passes timed separately (warm-up, then
// repeated runs: median and spread), the bytes each pass keeps, measured
// through the allocator, and the FLOP rate achieved.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/progress.h"
#include "models/model_config.h"
#include "models/profile_file.h"

namespace pipeplan::profiler {

struct ProfileRequest {
  models::ModelConfig model;
  std::vector<int> micro_batch_sizes{1};
  std::vector<int> seq_lens{128};
  int tp = 1;
  int warmup = 2;
  int repeats = 5;
  std::uint64_t seed = 1234;
  // Called before each layer kind is measured at a shape ("transformer,
  // b=1, seq=4096") and once when all are.
  ProgressFn progress;
};

// Reports that `done` measurements are done and the next is of `kind` at
// this shape (an empty kind: all are done).
void report_progress(const ProfileRequest& request, std::size_t done, const std::string& kind, int micro_batch_size,
                     int seq_len);

// The CPU backend (Eigen, fp32, this thread). Throws InputError for what it
// does not run (see build_cpu_layers) or a size that will not fit in memory.
models::Profile profile_layers_cpu(const ProfileRequest& request);

// "cpu: <model name> (1 thread)" from /proc/cpuinfo.
std::string cpu_description();
// The host memory free now, in bytes.
double available_host_memory_bytes();
// "Eigen 3.4.0": what the CPU backend's layers run on.
std::string eigen_version();
// Now, ISO 8601 in UTC.
std::string utc_timestamp();
// Median, min and max of samples.
models::Timing summarize(std::vector<double> samples);

// One run of a layer's three passes, on either backend.
struct PassRun {
  double forward_s = 0, input_s = 0, weight_s = 0;
  std::int64_t kept = 0;         // held after F (M_B)
  std::int64_t after_input = 0;  // still held after I (M_W)
  std::int64_t working = 0;      // the most used above what was held, over the passes
};

// The layer kinds a profile measures, each by one layer of the model.
struct ProfiledLayer {
  std::string kind;  // "embedding", "transformer", "output"
  int index;         // in models::expand_layers' numbering
};
std::vector<ProfiledLayer> profiled_layers(const models::ModelConfig& model);

// A profile's header for `request` on a backend: device, dtype, now, model, t.
models::Profile new_profile(const ProfileRequest& request, const std::string& device, const std::string& backend,
                            const std::string& dtype, const std::string& software);

// One layer kind at one shape from its measured runs (the caller leaves out
// warm-ups): timings (median and spread), bytes, working memory, and FLOPs
// from `layer`.
template <typename LayerType>
models::LayerMeasurement summarize_runs(const std::string& kind, int micro_batch_size, int seq_len,
                                        const std::vector<PassRun>& runs, const LayerType& layer) {
  models::LayerMeasurement m;
  m.layer = kind;
  m.micro_batch_size = micro_batch_size;
  m.seq_len = seq_len;
  const int tokens = m.tokens();
  std::vector<double> forward, input, weight;
  for (const PassRun& run : runs) {
    forward.push_back(run.forward_s);
    input.push_back(run.input_s);
    weight.push_back(run.weight_s);
    m.activation_bytes = run.kept;
    m.weight_grad_bytes = run.after_input;
    m.peak_working_bytes = std::max(m.peak_working_bytes, run.working);
  }
  m.forward = summarize(forward);
  m.backward_input = summarize(input);
  m.backward_weight = summarize(weight);
  m.forward_flops = layer.forward_flops(tokens);
  m.backward_input_flops = layer.backward_input_flops(tokens);
  m.backward_weight_flops = layer.backward_weight_flops(tokens);
  return m;
}

}  // namespace pipeplan::profiler
