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
  // The layout's options, each read as given (--recompute, --recompute-modules,
  // --rank-order, --zero and --etp through models/layout_fields.h).
  models::JobLayout layout;
  int seq = 0;  // 0: the model's context, at most kDefaultSeqCap
  bool allow_cross_node_tp = false;  // t may span NVLink domains
  bool no_flash_attention = false;
  bool allow_long_context = false;
  // Options whose being given implies more (selective with modules, the
  // model's default modules with selective, a rank order's checks).
  const CLI::Option* recompute = nullptr;
  const CLI::Option* recompute_modules = nullptr;
  const CLI::Option* rank_order = nullptr;
  const CLI::Option* sequence_parallel = nullptr;  // not given: on with t > 1, as plan searches
  bool given(const CLI::Option* option) const { return option != nullptr && option->count() > 0; }
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

// --precision and the flags of models::RuntimeFlags: --overlap-grad-reduce,
// --overlap-param-gather, --grad-reduce-in-bf16, --moe-a2a-overlap,
// --tp-comm-overlap and --optimizer-states-in-bf16 (shared with `plan`).
void add_runtime_flags(CLI::App& command, models::RuntimeFlags& flags);

// Checks every value (and the sequence against the model's context).
// `pipeline_ranks`: p, which decides how ZeRO-2/3 sync (TrainingShape::pipelined).
// A per-stage --recompute stays in options.layout.stage_recompute (the
// shape's recompute is then the modules' selective or none).
models::TrainingShape training_shape(const ShapeOptions& options, const models::ModelConfig& model, int pipeline_ranks);

// --recompute and --recompute-modules as given, read into `layout`: the
// modules imply selective, and another --recompute beside them is refused;
// a plain selective recomputes `model`'s default modules.
void resolve_recompute(bool recompute_given, bool modules_given, const models::ModelConfig& model,
                       models::JobLayout& layout);

// Refuses --sequence-parallel with t = 1 and --zero with d = c = 1 (neither
// would change anything).
void check_parallel_flags(int tp, bool sequence_parallel, int weight_replicas, int zero);
// Refuses the runtime flags where they cannot apply: the overlaps where
// there is nothing to overlap (d = 1, --overlap-param-gather without the
// distributed optimizer, --tp-comm-overlap without sequence parallelism),
// bf16 optimizer states without the distributed optimizer.
void check_overlap_flags(const models::TrainingShape& shape);
// --fp8-param-gather needs FP8 and the distributed optimizer (`zero`, or
// none where the search chooses it). Throws InputError.
void check_fp8_param_gather(const models::RuntimeFlags& runtime, std::optional<models::ZeroStage> zero);

// --memory-cap for a real GPU: refused above the GPU's memory (no cap can
// hold there) or without a unit (a bare number is bytes).
void check_memory_cap(std::int64_t cap_bytes, const std::string& given, const models::HardwareConfig& hardware);

// The help text of --allow-long-context, shared with `plan`.
inline constexpr const char* kAllowLongContextHelp =
    "Cost a --seq beyond the model's context (the positions it was trained for), as a RoPE-scaled model would run it";

}  // namespace pipeplan::commands
