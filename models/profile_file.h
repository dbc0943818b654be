// A measured profile: per layer kind and micro-batch shape, the time of the
// forward, input-gradient and weight-gradient passes, the bytes each keeps
// and its peak working memory; and optionally the point-to-point link
// sweep. Written by `pipeplan profile`, read by `simulate --profile` and
// `plan --profile`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeplan::models {

inline constexpr int kProfileSchemaVersion = 1;

// Median, fastest and slowest of repeated runs, in seconds.
struct Timing {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  int runs = 0;
};

struct LayerMeasurement {
  std::string layer;  // "embedding", "transformer", "output"
  int micro_batch_size = 1;
  int seq_len = 1;
  Timing forward;
  Timing backward_input;
  Timing backward_weight;
  std::int64_t activation_bytes = 0;   // kept after the forward (M_B)
  std::int64_t weight_grad_bytes = 0;  // still kept after the input-gradient pass (M_W)
  std::int64_t peak_working_bytes = 0; // highest transient use above what was kept, over the passes
  double forward_flops = 0;
  double backward_input_flops = 0;
  double backward_weight_flops = 0;
  int tokens() const { return micro_batch_size * seq_len; }
};

struct LinkMeasurement {
  std::int64_t bytes = 0;
  Timing time;          // one message, one direction
  double algbw = 0;     // bytes / time (nccl-tests' algbw, bytes per second)
  double busbw = 0;     // algbw x 1 for send/recv
};

struct LinkProfile {
  std::string backend;  // "mpi" or "nccl"
  std::vector<LinkMeasurement> sizes;
  double latency_s = 0;               // fitted: time = latency + bytes / bandwidth
  double bandwidth_bytes_per_s = 0;
};

struct Profile {
  int schema = kProfileSchemaVersion;
  std::string device;   // what ran it ("cpu: ... (1 thread)", "NVIDIA H200")
  std::string backend;  // "cpu" or "cuda"
  std::string dtype;    // "fp32", "bf16"
  std::string date;     // ISO 8601, UTC
  // What measured it besides the device: "Eigen 3.4.0", "CUDA driver 13.0,
  // runtime 13.0, cuBLAS 13.0.2" (empty in profiles written before it).
  std::string software;
  std::string model;    // the model's name
  int tp = 1;
  int warmup = 0;  // unmeasured runs before each layer's timed ones
  std::vector<LayerMeasurement> layers;
  std::optional<LinkProfile> links;
};

std::string write_profile_yaml(const Profile& profile);
// Throws ParseError naming the file and field; a profile of another schema
// version is refused with both versions named.
Profile read_profile_yaml(const std::string& path);

// Least-squares fit of time = latency + bytes / bandwidth over the sweep.
void fit_link(LinkProfile& links);

}  // namespace pipeplan::models
