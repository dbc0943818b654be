// The matrix-product rate a device reaches, shape by shape: one GEMM
// C = A B (A m x k, B k x n) timed alone, warm-up then repeated runs. The
// time model's GEMM estimate (models/gemm_time.h) is checked against such
// a sweep: waves, tile shapes and split-K show as a rate that varies with
// the shape at equal FLOPs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/profile_file.h"

namespace pipeplan::profiler {

struct GemmSize {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::string label;  // what the shape is ("llama3-8b fc1, 8192 tokens"); may be empty
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

struct GemmMeasurement {
  GemmSize size;
  models::Timing time;  // one kernel
  double flops_per_s() const { return time.median_s > 0 ? size.flops() / time.median_s : 0.0; }
};

struct GemmSweep {
  std::string device;
  std::string backend;
  std::string dtype;
  std::string date;
  std::string software;  // as a profile's (profile_file.h)
  int warmup = 0;
  std::vector<GemmMeasurement> shapes;
};

// "4096x4096x4096,8192x1280x8192" (m x n x k each). Throws InputError
// naming the bad entry.
std::vector<GemmSize> parse_gemm_sizes(const std::string& text);
// A GPU's default sweep: squares from 1024 to 16384 and the linear layers
// of Llama 3 8B (t = 1) and Llama 3 70B (t = 8) at 2048 and 8192 tokens,
// with their backward shapes.
std::vector<GemmSize> gpu_gemm_sizes();
// The CPU's default: squares and layer-like shapes up to 1024.
std::vector<GemmSize> cpu_gemm_sizes();

// A sweep's header, dated now; its shapes still to be measured. Throws
// InputError for repeats < 1 or warmup < 0.
GemmSweep new_gemm_sweep(const std::string& device, const std::string& backend, const std::string& dtype,
                         const std::string& software, int warmup, int repeats);

// Eigen, fp32, this thread. Throws InputError for repeats < 1 or warmup < 0.
GemmSweep measure_gemms_cpu(const std::vector<GemmSize>& sizes, int warmup, int repeats);

std::string write_gemm_sweep_yaml(const GemmSweep& sweep);

}  // namespace pipeplan::profiler
