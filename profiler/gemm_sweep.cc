#include "profiler/gemm_sweep.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdlib>

#include "common/eigen_core.h"
#include "common/error.h"
#include "common/quote.h"
#include "common/units.h"
#include "profiler/layer_profiler.h"

namespace pipeplan::profiler {
namespace {

// Larger shapes would take minutes on a CPU or more memory than a GPU has
// to spare for three operands.
constexpr std::int64_t kMaxDimension = 1 << 17;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at = text.find(separator); at != std::string::npos; at = text.find(separator, start)) {
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::int64_t dimension(const std::string& text, const std::string& entry) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > kMaxDimension) {
    throw InputError(
        fmt::format("--shapes {}: each of m, n and k is a whole number from 1 to {} (as in "
                    "4096x4096x4096)",
                    quoted_input(entry), kMaxDimension));
  }
  return value;
}

// The forward product of a linear layer Y = X W (X tokens x in) and its two
// backward products, dX = dY W^T and dW = X^T dY.
void add_linear(std::vector<GemmSize>& sizes, const std::string& what, std::int64_t tokens, std::int64_t in,
                std::int64_t out) {
  sizes.push_back({tokens, out, in, fmt::format("{} F, {} tokens", what, tokens)});
  sizes.push_back({tokens, in, out, fmt::format("{} I, {} tokens", what, tokens)});
  sizes.push_back({in, out, tokens, fmt::format("{} W, {} tokens", what, tokens)});
}

}  // namespace

std::vector<GemmSize> parse_gemm_sizes(const std::string& text) {
  std::vector<GemmSize> sizes;
  for (const std::string& entry : split(text, ',')) {
    if (entry.empty()) {
      throw InputError(
          fmt::format("--shapes {}: an empty shape; separate m x n x k shapes by single commas", quoted_input(text)));
    }
    const std::vector<std::string> parts = split(entry, 'x');
    if (parts.size() != 3) {
      throw InputError(fmt::format("--shapes {}: give m x n x k, as in 4096x4096x4096", quoted_input(entry)));
    }
    sizes.push_back({dimension(parts[0], entry), dimension(parts[1], entry), dimension(parts[2], entry), ""});
  }
  return sizes;
}

std::vector<GemmSize> gpu_gemm_sizes() {
  std::vector<GemmSize> sizes;
  for (std::int64_t n : {1024, 2048, 4096, 8192, 16384}) sizes.push_back({n, n, n, "square"});
  for (std::int64_t tokens : {2048, 8192}) {
    // Llama 3 8B: hidden 4096, 32 query and 8 key-value heads of 128, SwiGLU 14336.
    add_linear(sizes, "llama3-8b qkv", tokens, 4096, 6144);
    add_linear(sizes, "llama3-8b fc1", tokens, 4096, 2 * 14336);
    add_linear(sizes, "llama3-8b fc2", tokens, 14336, 4096);
    // Llama 3 70B at t = 8: hidden 8192, (8 + 2) heads of 128 and 28672 / 8 SwiGLU units per rank.
    add_linear(sizes, "llama3-70b/8 qkv", tokens, 8192, 1280);
    add_linear(sizes, "llama3-70b/8 proj", tokens, 1024, 8192);
    add_linear(sizes, "llama3-70b/8 fc1", tokens, 8192, 2 * 3584);
  }
  return sizes;
}

std::vector<GemmSize> cpu_gemm_sizes() {
  std::vector<GemmSize> sizes;
  for (std::int64_t n : {128, 256, 512, 1024}) sizes.push_back({n, n, n, "square"});
  add_linear(sizes, "linear 256 -> 1024", 512, 256, 1024);
  return sizes;
}

GemmSweep new_gemm_sweep(const std::string& device, const std::string& backend, const std::string& dtype,
                         const std::string& software, int warmup, int repeats) {
  if (repeats < 1 || warmup < 0) throw InputError("--repeats must be >= 1 and --warmup >= 0");
  GemmSweep sweep;
  sweep.device = device;
  sweep.backend = backend;
  sweep.dtype = dtype;
  sweep.date = utc_timestamp();
  sweep.software = software;
  sweep.warmup = warmup;
  return sweep;
}

GemmSweep measure_gemms_cpu(const std::vector<GemmSize>& sizes, int warmup, int repeats) {
  GemmSweep sweep = new_gemm_sweep(cpu_description(), "cpu", "fp32", eigen_version(), warmup, repeats);
  for (const GemmSize& size : sizes) {
    // Eigen would throw std::bad_alloc for what the host cannot hold.
    const double bytes = 4.0 * (static_cast<double>(size.m) * static_cast<double>(size.k) +
                                static_cast<double>(size.k) * static_cast<double>(size.n) +
                                static_cast<double>(size.m) * static_cast<double>(size.n));
    if (bytes > available_host_memory_bytes()) {
      throw InputError(fmt::format("the {}x{}x{} GEMM's fp32 operands need {} but {} is free; give smaller --shapes",
                                   size.m, size.n, size.k, format_bytes(bytes),
                                   format_bytes(available_host_memory_bytes())));
    }
    const Eigen::MatrixXf a = Eigen::MatrixXf::Random(size.m, size.k);
    const Eigen::MatrixXf b = Eigen::MatrixXf::Random(size.k, size.n);
    Eigen::MatrixXf c(size.m, size.n);
    std::vector<double> samples;
    for (int run = 0; run < warmup + repeats; ++run) {
      const auto start = std::chrono::steady_clock::now();
      c.noalias() = a * b;
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (run >= warmup) samples.push_back(took.count());
    }
    sweep.shapes.push_back({size, summarize(std::move(samples))});
  }
  return sweep;
}

std::string write_gemm_sweep_yaml(const GemmSweep& sweep) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "device" << YAML::Value << sweep.device;
  out << YAML::Key << "backend" << YAML::Value << sweep.backend;
  out << YAML::Key << "dtype" << YAML::Value << sweep.dtype;
  out << YAML::Key << "date" << YAML::Value << sweep.date;
  if (!sweep.software.empty()) out << YAML::Key << "software" << YAML::Value << sweep.software;
  out << YAML::Key << "warmup" << YAML::Value << sweep.warmup;
  out << YAML::Key << "gemms" << YAML::Value << YAML::BeginSeq;
  for (const GemmMeasurement& g : sweep.shapes) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "m" << YAML::Value << g.size.m << YAML::Key << "n" << YAML::Value << g.size.n;
    out << YAML::Key << "k" << YAML::Value << g.size.k;
    if (!g.size.label.empty()) out << YAML::Key << "what" << YAML::Value << g.size.label;
    out << YAML::Key << "median_s" << YAML::Value << g.time.median_s << YAML::Key << "min_s" << YAML::Value
        << g.time.min_s << YAML::Key << "max_s" << YAML::Value << g.time.max_s;
    out << YAML::Key << "runs" << YAML::Value << g.time.runs;
    out << YAML::Key << "tflops" << YAML::Value << g.flops_per_s() / 1e12 << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace pipeplan::profiler
