// profile_layers_cuda: the CUDA backend of `pipeplan profile`, measured as
// profile_layers_cpu measures (layer_profiler.cc): per layer kind and
// micro-batch shape, warm-up then repeated F, I and W passes, each timed
// with CUDA events on the layer's stream; the bytes kept after F (M_B) and
// after I (M_W) as the layer reports them, and the peak working memory
// through the counting allocator.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "common/error.h"
#include "common/units.h"
#include "profiler/backends.h"
#include "profiler/cpu/model_builder.h"
#include "profiler/cuda/cuda_model_builder.h"
#include "profiler/cuda/device_memory.h"
#include "profiler/cuda/device_memory_estimate.h"
#include "profiler/cuda/stream_timer.h"
#include "profiler/cuda/tensor_access.h"
#include "profiler/tensor_parallel_shard.h"

namespace pipeplan::profiler {
namespace {

// Random activations in [-1, 1) (never zeros), drawn on the device: a
// fixed seed per micro-batch.
DeviceTensor random_activations(const std::shared_ptr<DeviceContext>& context, std::int64_t rows, int cols,
                                std::uint64_t seed) {
  DeviceTensor tensor(context, rows, cols, DType::kBf16);
  kernels::fill_uniform(bf16_data(tensor), tensor.size(), seed, context->stream());
  return tensor;
}

models::TrainingShape shape_of(const ProfileRequest& request, int micro_batch_size, int seq_len) {
  models::TrainingShape shape;
  shape.micro_batch_size = micro_batch_size;
  shape.seq_len = seq_len;
  shape.tp = request.tp;
  return shape;
}

void check_request(const ProfileRequest& request) {
  if (request.repeats < 1 || request.warmup < 0) throw InputError("--repeats must be >= 1 and --warmup >= 0");
  if (request.micro_batch_sizes.empty() || request.seq_lens.empty()) {
    throw InputError("--micro-batch-size and --seq need at least one value each");
  }
  if (cuda_device_count() == 0) {
    throw InputError(
        fmt::format("--backend cuda: no CUDA GPU found ({}): use --backend cpu", cuda_unavailable_reason()));
  }
  for (int b : request.micro_batch_sizes) {
    for (int s : request.seq_lens) {
      if (b < 1 || s < 1) {
        throw InputError(fmt::format("micro-batch size and sequence must be >= 1 (got {} x {})", b, s));
      }
    }
  }
}

// Refuses shapes whose layer, activations and working buffers exceed the
// GPU's free memory (nothing of ours is allocated yet).
void check_fits(const ProfileRequest& request, const DeviceContext& context) {
  context.release_cached_memory();
  const std::int64_t free = context.free_bytes();
  for (int b : request.micro_batch_sizes) {
    for (int s : request.seq_lens) {
      const std::int64_t needed = estimated_device_bytes(request.model, shape_of(request, b, s));
      if (needed > free) {
        throw InputError(
            fmt::format("profiling {} at micro-batch {} x {} tokens needs about {} of GPU memory but {} "
                        "is free on GPU {}; lower --seq or --micro-batch-size",
                        request.model.name, b, s, format_bytes(needed), format_bytes(free), context.device()));
      }
    }
  }
}

class PassRunner {
 public:
  PassRunner(std::shared_ptr<DeviceContext> context, const ProfileRequest& request)
      : context_(std::move(context)), request_(request), timer_(*context_) {}

  models::LayerMeasurement measure(DeviceLayer& layer, const models::TrainingShape& shape, const ProfiledLayer& run);

 private:
  std::shared_ptr<DeviceContext> context_;
  const ProfileRequest& request_;
  StreamTimer timer_;
};

models::LayerMeasurement PassRunner::measure(DeviceLayer& layer, const models::TrainingShape& shape,
                                             const ProfiledLayer& run) {
  const int total = request_.warmup + request_.repeats;
  const int tokens = shape.micro_batch_size * shape.seq_len;
  const int device = context_->device();
  const std::uint64_t seed = request_.seed;
  std::vector<PassRun> runs;
  for (int mb = 0; mb < total; ++mb) {
    DeviceTensor in = run.kind == "embedding"
                          ? sample_device_tokens(context_, request_.model, shape, mb, seed)
                          : random_activations(context_, tokens, request_.model.hidden, seed + 7919 * mb);
    if (run.kind == "output") set_device_targets(layer, mb, sample_targets(request_.model, shape, mb, seed));
    DeviceTensor grad = run.kind == "output"
                            ? DeviceTensor()  // the output layer starts from its loss
                            : random_activations(context_, tokens, request_.model.hidden, seed + 104729 * mb);
    context_->synchronize();
    DeviceMemoryProbe probe(device);
    timer_.start();
    layer.forward(mb, std::move(in));  // the output is dropped, as the next layer would take it
    const double f = timer_.stop_seconds();
    const std::int64_t kept = layer.held_bytes(mb);
    std::int64_t working = probe.peak_above_start() - probe.now_above_start();
    DeviceMemoryProbe input_probe(device);
    timer_.start();
    layer.backward_input(mb, std::move(grad));
    const double i = timer_.stop_seconds();
    working = std::max(working, input_probe.peak_above_start() - input_probe.now_above_start());
    const std::int64_t after_input = layer.held_bytes(mb);
    DeviceMemoryProbe weight_probe(device);
    timer_.start();
    layer.backward_weight(mb);
    const double w = timer_.stop_seconds();
    working = std::max(working, weight_probe.peak_above_start() - weight_probe.now_above_start());
    if (mb >= request_.warmup) runs.push_back({f, i, w, kept, after_input, working});
  }
  return summarize_runs(run.kind, shape.micro_batch_size, shape.seq_len, runs, layer);
}

}  // namespace

models::Profile profile_layers_cuda(const ProfileRequest& asked) {
  check_request(asked);
  const ProfileRequest request = shard_request(asked);  // one rank's share of a t-way shard
  auto context = std::make_shared<DeviceContext>(0);
  check_fits(request, *context);
  models::Profile profile =
      new_profile(asked, cuda_device_name(context->device()), "cuda", "bf16", cuda_software_versions());
  const std::vector<ProfiledLayer> runs = profiled_layers(request.model);
  const CudaModelOptions options{request.seed, request.warmup + request.repeats};
  PassRunner runner(context, request);
  // A layer depends on the sequence length only: each is built once per
  // length (drawing weights takes seconds) and measured at every
  // micro-batch size; the profile lists them in the CPU backend's order.
  std::map<std::tuple<int, int, std::size_t>, models::LayerMeasurement> measured;
  for (int s : request.seq_lens) {
    for (std::size_t r = 0; r < runs.size(); ++r) {
      try {
        const models::TrainingShape built = shape_of(request, request.micro_batch_sizes.front(), s);
        auto layers = build_cuda_layers(context, request.model, built, runs[r].index, runs[r].index + 1, options);
        for (int b : request.micro_batch_sizes) {
          report_progress(request, measured.size(), runs[r].kind, b, s);
          measured[{b, s, r}] = runner.measure(*layers.front(), shape_of(request, b, s), runs[r]);
        }
      } catch (const DeviceOutOfMemory& error) {
        throw InputError(
            fmt::format("{} while profiling the {} layer at {} tokens per sequence; lower --seq or "
                        "--micro-batch-size",
                        error.what(), runs[r].kind, s));
      }
    }
  }
  report_progress(request, measured.size(), "", 0, 0);
  for (int b : request.micro_batch_sizes) {
    for (int s : request.seq_lens) {
      for (std::size_t r = 0; r < runs.size(); ++r) profile.layers.push_back(measured.at({b, s, r}));
    }
  }
  return profile;
}

bool built_with_cuda() { return true; }

}  // namespace pipeplan::profiler
