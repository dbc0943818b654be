#include "profiler/layer_profiler.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <random>

#include "common/eigen_core.h"
#include "common/error.h"
#include "common/units.h"
#include "profiler/cpu/model_builder.h"
#include "profiler/memory_probe.h"
#include "profiler/tensor_parallel_shard.h"

namespace pipeplan::profiler {
namespace {

using Clock = std::chrono::steady_clock;

// Random activations (never zeros): a fixed seed per shape.
Matrix random_activations(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  Matrix matrix(rows, cols);
  for (Eigen::Index i = 0; i < matrix.size(); ++i) matrix.data()[i] = value(generator);
  return matrix;
}

// Refuses shapes whose weights, gradients and activations exceed the
// memory this machine has available.
void check_fits(const ProfileRequest& request, const models::TrainingShape& shape) {
  const double h = request.model.hidden, ffn = request.model.ffn;
  const double block_params = 4 * h * h + 3 * h * ffn;
  const double output_params = static_cast<double>(request.model.vocab) * h;
  const double tokens = static_cast<double>(shape.micro_batch_size) * shape.seq_len;
  const double activations = tokens * (20 * h + 4 * ffn + static_cast<double>(request.model.vocab) * 2) +
                             static_cast<double>(request.model.heads) * shape.seq_len * tokens * 2;
  const double needed = 4 * (2 * std::max(block_params, output_params) + activations * (request.repeats + 1));
  const double available = available_host_memory_bytes();
  if (needed > available) {
    throw InputError(fmt::format("profiling {} at micro-batch {} x {} tokens needs about {} but {} is free; lower "
                                 "--seq or --micro-batch-size",
                                 request.model.name, shape.micro_batch_size, shape.seq_len,
                                 format_bytes(needed), format_bytes(available)));
  }
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

models::LayerMeasurement measure(const ProfileRequest& request, const models::TrainingShape& shape,
                                 const ProfiledLayer& run) {
  const int total = request.warmup + request.repeats;
  CpuModelOptions options{request.seed, total};
  auto layers = build_cpu_layers(request.model, shape, run.index, run.index + 1, options);
  Layer& layer = *layers.front();
  const int tokens = shape.micro_batch_size * shape.seq_len;
  std::vector<PassRun> runs;
  for (int mb = 0; mb < total; ++mb) {
    Matrix in = run.kind == "embedding" ? sample_tokens(request.model, shape, mb, request.seed)
                                        : random_activations(tokens, request.model.hidden, request.seed + 7919 * mb);
    if (run.kind == "output") set_targets(layer, mb, sample_targets(request.model, shape, mb, request.seed));
    const Matrix grad = random_activations(tokens, request.model.hidden, request.seed + 104729 * mb);
    MemoryProbe probe;
    auto start = Clock::now();
    layer.forward(mb, in);
    const double f = seconds_since(start);
    const std::int64_t kept = layer.held_bytes(mb);
    std::int64_t working = probe.peak_above_start() - probe.now_above_start();
    start = Clock::now();
    MemoryProbe input_probe;
    layer.backward_input(mb, run.kind == "output" ? Matrix::Ones(1, 1) : grad);
    const double i = seconds_since(start);
    working = std::max(working, input_probe.peak_above_start() - input_probe.now_above_start());
    const std::int64_t after_input = layer.held_bytes(mb);
    start = Clock::now();
    layer.backward_weight(mb);
    const double w = seconds_since(start);
    if (mb >= request.warmup) runs.push_back({f, i, w, kept, after_input, working});
  }
  return summarize_runs(run.kind, shape.micro_batch_size, shape.seq_len, runs, layer);
}

}  // namespace

std::vector<ProfiledLayer> profiled_layers(const models::ModelConfig& model) {
  return {{"embedding", 0}, {"transformer", 1}, {"output", model.layers + 1}};
}

models::Profile new_profile(const ProfileRequest& request, const std::string& device, const std::string& backend,
                            const std::string& dtype, const std::string& software) {
  models::Profile profile;
  profile.device = device;
  profile.backend = backend;
  profile.dtype = dtype;
  profile.date = utc_timestamp();
  profile.software = software;
  profile.model = request.model.name;
  profile.tp = request.tp;
  profile.warmup = request.warmup;
  return profile;
}

models::Timing summarize(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return {median, samples.front(), samples.back(), static_cast<int>(n)};
}

double available_host_memory_bytes() {
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

std::string eigen_version() {
  return fmt::format("Eigen {}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
}

std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return fmt::format("cpu: {} (1 thread)", line.substr(line.find(':') + 2));
  }
  return "cpu (1 thread)";
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

void report_progress(const ProfileRequest& request, std::size_t done, const std::string& kind, int micro_batch_size,
                     int seq_len) {
  if (!request.progress) return;
  const std::size_t total =
      profiled_layers(request.model).size() * request.micro_batch_sizes.size() * request.seq_lens.size();
  request.progress(done, total, kind.empty() ? "done" : fmt::format("{}, b={}, seq={}", kind, micro_batch_size, seq_len));
}

models::Profile profile_layers_cpu(const ProfileRequest& asked) {
  if (asked.repeats < 1 || asked.warmup < 0) throw InputError("--repeats must be >= 1 and --warmup >= 0");
  const ProfileRequest request = shard_request(asked);  // one rank's share of a t-way shard
  models::Profile profile = new_profile(asked, cpu_description(), "cpu", "fp32", eigen_version());
  const std::vector<ProfiledLayer> runs = profiled_layers(request.model);
  for (int b : request.micro_batch_sizes) {
    for (int s : request.seq_lens) {
      if (b < 1 || s < 1) throw InputError(fmt::format("micro-batch size and sequence must be >= 1 (got {} x {})", b, s));
      models::TrainingShape shape;
      shape.micro_batch_size = b;
      shape.seq_len = s;
      check_fits(request, shape);
      for (const ProfiledLayer& run : runs) {
        report_progress(request, profile.layers.size(), run.kind, b, s);
        profile.layers.push_back(measure(request, shape, run));
      }
    }
  }
  report_progress(request, profile.layers.size(), "", 0, 0);
  return profile;
}

}  // namespace pipeplan::profiler
