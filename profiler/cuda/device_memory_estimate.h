// How much GPU memory profiling one layer needs, to refuse a shape that
// will not fit before minutes are spent drawing weights.
#pragma once

#include <cstdint>

#include "models/model_config.h"
#include "models/training_shape.h"

namespace pipeplan::profiler {

// The most any one layer kind (embedding, block, output) needs at `shape`:
// its weights (bf16) and gradients (fp32), what one micro-batch keeps and
// the passes' largest transient buffers, plus a fifth for the pool's
// rounding and cuBLAS's workspaces.
std::int64_t estimated_device_bytes(const models::ModelConfig& model, const models::TrainingShape& shape);

}  // namespace pipeplan::profiler
