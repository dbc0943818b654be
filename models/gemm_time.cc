#include "models/gemm_time.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace pipeplan::models {
namespace {

// cuBLAS and CUTLASS split the summed dimension only into parts deep enough
// to amortize the partial sums' reduction, and into a handful of parts.
constexpr double kMinSplitDepth = 256;
constexpr int kMaxSplitK = 16;
constexpr double kBf16Bytes = 2;
constexpr double kFp8Bytes = 1;
constexpr double kPartialBytes = 4;  // fp32 partial sums of a split-K GEMM

// The whole problem in one tile of its own size: no quantization (a GPU
// description without SMs or tiles).
GemmTiming continuous(const GemmWork& gemm, double rate) {
  GemmTiming timing;
  timing.seconds = gemm.flops() / rate;
  timing.blocks = timing.waves = 1;
  return timing;
}

GemmTiming with_tile(const GemmWork& gemm, const GpuSpec& gpu, const GemmTile& tile, int split, double rate,
                     double stream_rate) {
  GemmTiming timing;
  timing.tile = tile;
  timing.split_k = split;
  const double tiles = std::ceil(gemm.m / tile.rows) * std::ceil(gemm.n / tile.columns) * gemm.batch;
  timing.blocks = tiles * split;
  timing.waves = std::ceil(timing.blocks / gpu.sms);
  // Each wave runs one block per SM at 1/SMs of the tile's rate.
  const double block_flops = 2.0 * tile.rows * tile.columns * std::ceil(gemm.k / split);
  const double compute = timing.waves * block_flops / (rate * tile.share / gpu.sms);
  const double inputs = gemm.fp8 ? kFp8Bytes : kBf16Bytes;
  const double operands = gemm.batch * (inputs * (gemm.m * gemm.k + gemm.k * gemm.n) + kBf16Bytes * gemm.m * gemm.n);
  const double partials = split > 1 ? 2 * kPartialBytes * gemm.batch * gemm.m * gemm.n * split : 0;
  const double stream = stream_rate > 0 ? operands / stream_rate : 0;
  const double reduction = stream_rate > 0 ? partials / stream_rate : 0;
  timing.memory_bound = stream > compute;
  timing.seconds = std::max(compute, stream) + reduction;
  return timing;
}

}  // namespace

GemmTiming gemm_timing(const GemmWork& gemm, const GpuSpec& gpu) {
  const double rate = gemm.fp8 ? gpu.peak_flops_fp8 * gpu.matmul.fp8_share() : gpu.peak_flops_bf16 * gpu.matmul.max_fraction;
  if (rate <= 0) {
    throw InputError(gemm.fp8 ? "--precision fp8: the GPU has no FP8 rate (gpu.peak_flops.fp8 is 0); use --precision bf16"
                              : "hardware: gpu.peak_flops.bf16 is zero; set it in the hardware file");
  }
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.batch <= 0) return {};
  GemmTiming best;
  if (gpu.sms <= 0 || gpu.gemm_tiles.empty()) {
    best = continuous(gemm, rate);
  } else {
    const double stream_rate = gpu.memory_bandwidth * gpu.memory.max_fraction;
    best.seconds = INFINITY;
    for (const GemmTile& tile : gpu.gemm_tiles) {
      const double tiles = std::ceil(gemm.m / tile.rows) * std::ceil(gemm.n / tile.columns) * gemm.batch;
      // Split only outputs that leave SMs idle, into parts still deep enough.
      const int most = tiles >= gpu.sms ? 1
                                        : static_cast<int>(std::clamp(std::min(std::floor(gpu.sms / tiles),
                                                                               std::floor(gemm.k / kMinSplitDepth)),
                                                                      1.0, static_cast<double>(kMaxSplitK)));
      for (int split = 1; split <= most; ++split) {
        const GemmTiming timing = with_tile(gemm, gpu, tile, split, rate, stream_rate);
        if (timing.seconds < best.seconds) best = timing;
      }
    }
  }
  best.seconds += gpu.matmul.kernel_overhead_s;
  return best;
}

}  // namespace pipeplan::models
