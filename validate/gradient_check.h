// The pipelined run must compute what an unpipelined one computes: the
// same loss and the same gradient for every parameter. The reference runs
// the whole model in one process on the CPU (fp32), each micro-batch
// forward then backward; the check passes below a tolerance that depends
// on the precision the pipelined run computed in, and travels with it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cpu/layer.h"

namespace pipeplan::validate {

// fp32 against fp32 with the same weights: the pipelined run and the
// reference add the same terms, the gradients only in another order across
// micro-batches, so they differ by a few fp32 roundings (~1e-7 relative).
inline constexpr double kFp32GradientTolerance = 1e-5;

// bf16 on a GPU against the fp32 reference with the same bf16-rounded
// weights. It is the bound tests/profiler/cuda_layers_test.cc holds each layer's
// pass to: the GPU rounds each tensor it stores between kernels to 8
// significant bits (at most 2^-9 = 0.2% each), and the ~10 roundings
// along a layer add mostly independent errors, 0.5-1.5% norm-wise. Across
// the whole model they compound little: at the initial weights (std 0.02)
// each block's branch is small beside the residual path that carries the
// signal and its gradient, so the model's gradients see about one layer's
// worth of rounding. A schedule bug moves them far more: a micro-batch's
// pass lost or run twice shifts every gradient by 1/m to 1/sqrt(m) of its
// norm (25-50% at the tests' m = 4), an activation paired with another
// micro-batch's gradient by tens of percent.
inline constexpr double kBf16GradientTolerance = 3e-2;

struct ReferenceRun {
  double loss = 0;                                       // mean over micro-batches
  std::vector<std::unique_ptr<profiler::Layer>> layers;  // all of them, gradients accumulated
};

// `bf16_weights`: every weight rounded to bf16 first, as build_cuda_layers
// uploads them, so that a GPU run is compared with its own weights.
ReferenceRun run_reference(const models::ModelConfig& model, const models::TrainingShape& shape, int microbatches,
                           std::uint64_t seed, bool bf16_weights = false);

struct GradientCheck {
  int parameters = 0;             // compared
  double max_relative_error = 0;  // ||g - g_ref|| / ||g_ref||, the worst parameter's
  std::string worst_parameter;    // "layer 3 attention.qkv.weight"
  int worst_layer = -1;
  double tolerance = kFp32GradientTolerance;  // passes below it (the backend's)
};

// Adds one pipelined parameter's gradient (the parameter `name` of global
// layer `layer`) to `check`, compared with the reference's.
void compare_gradient(int layer, const std::string& name, const profiler::Matrix& gradient, ReferenceRun& reference,
                      GradientCheck& check);

}  // namespace pipeplan::validate
