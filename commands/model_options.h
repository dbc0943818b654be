// Options that describe a model's training shape (shared by `simulate
// --model` and `model show`), and their conversion to the cost model's types.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/training_shape.h"

namespace pipeplan::commands {

struct ShapeOptions {
  int micro_batch_size = 1;
  int seq = 0;  // 0: the model's context, at most kDefaultSeqCap
  int tp = 1;
  int cp = 1;
  int dp = 1;
  bool allow_cross_node_tp = false;  // t may span NVLink domains
  std::optional<std::string> rank_order;  // Megatron's: tp-cp-ep-dp-pp (default) or tp-pp-dp (simulate)
  bool sequence_parallel = false;
  std::optional<std::string> recompute;  // not given: none
  std::optional<std::string> recompute_modules;
  int zero = 0;
  bool no_flash_attention = false;
  bool allow_long_context = false;
  models::RuntimeFlags runtime;
  int ep = 1;
  std::optional<int> etp;  // not given: as t
  models::MoeRouting routing;
};

constexpr int kDefaultSeqCap = 8192;

// A layout knob's help, as models/layout_fields.h words it for every
// command, with what this command does when it is not given.
std::string layout_help(std::string_view key, std::string_view when_not_given = "");

// --micro-batch-size, --seq, --allow-long-context, --tp, --cp,
// --sequence-parallel / --no-sequence-parallel, --recompute,
// --no-flash-attention; with `with_data_parallel` also --dp, --zero,
// --overlap-grad-reduce, --overlap-param-gather, --grad-reduce-in-bf16 and
// --tp-comm-overlap (the step-level settings `simulate` costs).
void add_shape_options(CLI::App& command, ShapeOptions& options, bool with_data_parallel);

// --rank-order as given: the shape's pipeline_first_ranks, refused where
// Megatron refuses it (c > 1, experts) or where both orders place every
// rank alike (p = 1 or d = 1).
void apply_rank_order(const std::string& order, const models::ModelConfig& model, int pipeline_ranks,
                      models::TrainingShape& shape);

// --moe-load-imbalance, --moe-capacity-factor and --moe-dispatcher (shared
// with `plan`, which adds --ep and --etp as search axes).
void add_routing_options(CLI::App& command, models::MoeRouting& routing);

// --precision, --overlap-grad-reduce, --overlap-param-gather,
// --grad-reduce-in-bf16, --moe-a2a-overlap and --tp-comm-overlap (shared
// with `plan`).
void add_runtime_flags(CLI::App& command, models::RuntimeFlags& flags);

// Checks every value (and the sequence against the model's context).
// `pipeline_ranks`: p, which decides how ZeRO-2/3 sync (TrainingShape::pipelined).
models::TrainingShape training_shape(const ShapeOptions& options, const models::ModelConfig& model, int pipeline_ranks);

// --recompute and --recompute-modules, where given, into `shape`: the
// modules imply selective, and another --recompute beside them is refused;
// a plain selective recomputes `model`'s default modules.
void apply_recompute_options(const std::optional<std::string>& recompute, const std::optional<std::string>& modules,
                             const models::ModelConfig& model, models::TrainingShape& shape);

// Refuses --sequence-parallel with t = 1 and --zero with d = c = 1 (neither
// would change anything).
void check_parallel_flags(int tp, bool sequence_parallel, int weight_replicas, int zero);
// Refuses the overlap flags where there is nothing to overlap: d = 1, or
// --overlap-param-gather without the distributed optimizer (--zero 1), or
// --tp-comm-overlap without sequence parallelism.
void check_overlap_flags(const models::TrainingShape& shape);

// --memory-cap for a real GPU: refused above the GPU's memory (no cap can
// hold there) or without a unit (a bare number is bytes).
void check_memory_cap(std::int64_t cap_bytes, const std::string& given, const models::HardwareConfig& hardware);

// The help text of --allow-long-context, shared with `plan`.
inline constexpr const char* kAllowLongContextHelp =
    "Cost a --seq beyond the model's context (the positions it was trained for), as a RoPE-scaled model would run it";

}  // namespace pipeplan::commands
