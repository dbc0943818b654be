// measure_gemms_cuda: the CUDA backend of `pipeplan profile gemm`. Each
// shape is one bf16 cuBLAS GEMM with fp32 accumulation (as the layers run
// theirs) on random operands, timed with CUDA events. A sample is the mean
// of back-to-back launches filling about a millisecond, so that the events'
// own resolution does not dominate small shapes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/units.h"
#include "profiler/backends.h"
#include "profiler/cuda/device_memory.h"
#include "profiler/cuda/gemm.h"
#include "profiler/cuda/stream_timer.h"
#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {
namespace {

constexpr double kSampleSeconds = 1e-3;
constexpr int kMostLaunchesPerSample = 256;

DeviceTensor random_matrix(const std::shared_ptr<DeviceContext>& context, std::int64_t rows, std::int64_t cols,
                           std::uint64_t seed) {
  DeviceTensor tensor(context, rows, cols, DType::kBf16);
  kernels::fill_uniform(bf16_data(tensor), tensor.size(), seed, context->stream());
  return tensor;
}

models::Timing measure_one(const std::shared_ptr<DeviceContext>& context, const GemmSize& size, int warmup,
                           int repeats) {
  const DeviceTensor a = random_matrix(context, size.m, size.k, 17);
  const DeviceTensor b = random_matrix(context, size.k, size.n, 29);
  DeviceTensor c(context, size.m, size.n, DType::kBf16);
  const GemmShape shape{size.m, size.n, size.k, 1};
  const GemmOperand left{a.data(), DType::kBf16, size.k, false, 0};
  const GemmOperand right{b.data(), DType::kBf16, size.n, false, 0};
  const GemmResult out{c.data(), DType::kBf16, size.n, 0};
  StreamTimer timer(*context);
  auto timed = [&](int launches) {
    timer.start();
    for (int i = 0; i < launches; ++i) gemm(*context, shape, 1.0f, left, right, 0.0f, out);
    return timer.stop_seconds() / launches;
  };
  for (int i = 0; i < std::max(warmup, 1); ++i) timed(1);
  const double once = std::max(timed(1), 1e-7);
  const int launches = std::clamp(static_cast<int>(std::ceil(kSampleSeconds / once)), 1, kMostLaunchesPerSample);
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) samples.push_back(timed(launches));
  return summarize(std::move(samples));
}

}  // namespace

GemmSweep measure_gemms_cuda(const std::vector<GemmSize>& sizes, int warmup, int repeats) {
  if (repeats < 1 || warmup < 0) throw InputError("--repeats must be >= 1 and --warmup >= 0");
  if (cuda_device_count() == 0) {
    throw InputError(
        fmt::format("--backend cuda: no CUDA GPU found ({}): use --backend cpu", cuda_unavailable_reason()));
  }
  auto context = std::make_shared<DeviceContext>(0);
  GemmSweep sweep =
      new_gemm_sweep(cuda_device_name(context->device()), "cuda", "bf16", cuda_software_versions(), warmup, repeats);
  for (const GemmSize& size : sizes) {
    try {
      sweep.shapes.push_back({size, measure_one(context, size, warmup, repeats)});
    } catch (const DeviceOutOfMemory& error) {
      throw InputError(
          fmt::format("{} for the {}x{}x{} GEMM; give smaller --shapes", error.what(), size.m, size.n, size.k));
    }
  }
  return sweep;
}

}  // namespace pipeplan::profiler
