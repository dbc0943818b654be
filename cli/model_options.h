// Options that describe a model's training shape (shared by `simulate
// --model` and `model show`), and their conversion to the cost model's types.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "models/model_config.h"
#include "models/training_shape.h"

namespace pipeplan::cli {

struct ShapeOptions {
  int micro_batch_size = 1;
  int seq = 0;  // 0: the model's context, at most kDefaultSeqCap
  int tp = 1;
  int dp = 1;
  bool sequence_parallel = false;
  std::string recompute = "none";
  int zero = 0;
  bool no_flash_attention = false;
};

constexpr int kDefaultSeqCap = 8192;

// --micro-batch-size, --seq, --tp, --sequence-parallel, --recompute,
// --no-flash-attention; with `with_data_parallel` also --dp and --zero.
void add_shape_options(CLI::App& command, ShapeOptions& options, bool with_data_parallel);

models::TrainingShape training_shape(const ShapeOptions& options, const models::ModelConfig& model);

}  // namespace pipeplan::cli
