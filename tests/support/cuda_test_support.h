// What the CUDA tests share: skipping where no GPU is found (with the
// reason), a shape of b x s, and the zoo's tiny model.
#pragma once

#include <gtest/gtest.h>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cuda/device_context.h"

#define SKIP_WITHOUT_GPU()                                                                \
  do {                                                                                    \
    if (::pipeplan::profiler::cuda_device_count() == 0) {                                 \
      GTEST_SKIP() << "no CUDA GPU: " << ::pipeplan::profiler::cuda_unavailable_reason(); \
    }                                                                                     \
  } while (false)

namespace pipeplan::testing {

inline models::TrainingShape shape_of(int micro_batch_size, int seq_len) {
  models::TrainingShape shape;
  shape.micro_batch_size = micro_batch_size;
  shape.seq_len = seq_len;
  return shape;
}

// The zoo's tiny Llama-style model: RMSNorm, SwiGLU, RoPE, 4 query heads
// sharing 2 key/value heads.
inline models::ModelConfig tiny() { return models::load_model("tiny"); }

}  // namespace pipeplan::testing
