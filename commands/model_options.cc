#include "commands/model_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/error.h"
#include "common/units.h"
#include "models/expert_parallel.h"
#include "models/layout_fields.h"
#include "models/placement.h"

namespace pipeplan::commands {

std::string layout_help(std::string_view key, std::string_view when_not_given) {
  const models::LayoutField* field = models::find_layout_field(key);
  if (field == nullptr) throw std::logic_error(fmt::format("no layout field '{}'", key));
  if (when_not_given.empty()) return std::string(field->help);
  return fmt::format("{} [default: {}]", field->help, when_not_given);
}

namespace {

// An option read through the layout table into `layout` as it is given:
// a whole number (CLI11 words a value that is none) or a text.
template <class Value>
CLI::Option* add_layout_option(CLI::App& command, const std::string& name, models::JobLayout& layout,
                               const std::string& help) {
  const models::LayoutField* field = models::find_layout_field(name);
  return command.add_option_function<Value>(
      "--" + name,
      [field, &layout](const Value& value) { models::read_option_value(*field, fmt::format("{}", value), layout); },
      help);
}

}  // namespace

void add_shape_options(CLI::App& command, ShapeOptions& options, bool with_data_parallel) {
  models::JobLayout& layout = options.layout;
  command.add_option("--micro-batch-size,-b", layout.micro_batch_size, layout_help("micro-batch-size"))
      ->capture_default_str();
  command.add_option("--seq,-s", options.seq,
                     fmt::format("Sequence length in tokens; 0 = the model's context, at most {}", kDefaultSeqCap))
      ->capture_default_str();
  command.add_flag("--allow-long-context", options.allow_long_context, kAllowLongContextHelp);
  command.add_option("--tp,-t", layout.tp, layout_help("tp"))->capture_default_str();
  command.add_option("--cp", layout.cp, layout_help("cp"))->capture_default_str();
  options.sequence_parallel = command.add_flag("--sequence-parallel,!--no-sequence-parallel", layout.sequence_parallel,
                                               layout_help("sequence-parallel", "on with t > 1, Megatron's advice"));
  options.recompute = add_layout_option<std::string>(command, "recompute", layout, layout_help("recompute", "none"));
  options.recompute_modules =
      add_layout_option<std::string>(command, "recompute-modules", layout, layout_help("recompute-modules"));
  command.add_flag("--no-flash-attention", options.no_flash_attention,
                   "Store the attention scores (5as^2b bytes per layer) as without FlashAttention");
  command.add_flag("--allow-cross-node-tp", options.allow_cross_node_tp,
                   "Let t span NVLink domains: its collectives are costed at the network tier they cross");
  if (!with_data_parallel) return;
  options.rank_order =
      add_layout_option<std::string>(command, "rank-order", layout, layout_help("rank-order", "tp-cp-ep-dp-pp"));
  command.add_option("--dp,-d", layout.dp, layout_help("dp"))->capture_default_str();
  add_layout_option<int>(command, "zero", layout, layout_help("zero"))->default_str("0");
  command.add_option("--ep", layout.ep, layout_help("ep"))->capture_default_str();
  add_routing_options(command, layout.routing);
  add_layout_option<int>(command, "etp", layout, layout_help("etp", "t"));
  add_layout_option<int>(command, "mtp-layers", layout, layout_help("mtp-layers", "0"));
  add_runtime_flags(command, layout.runtime);
}

void add_routing_options(CLI::App& command, models::MoeRouting& routing) {
  command.add_option("--moe-load-imbalance", routing.load_imbalance, layout_help("moe-load-imbalance"))
      ->capture_default_str();
  command.add_option("--moe-capacity-factor", routing.capacity_factor, layout_help("moe-capacity-factor", "dropless"));
  command
      .add_option_function<std::string>(
          "--moe-dispatcher",
          [&routing](const std::string& value) {
            routing.dispatcher = models::parse_moe_dispatcher(value, "--moe-dispatcher");
          },
          layout_help("moe-dispatcher"))
      ->type_name("TEXT")
      ->default_str("alltoall");
}

void add_runtime_flags(CLI::App& command, models::RuntimeFlags& flags) {
  command
      .add_option_function<std::string>(
          "--precision",
          [&flags](const std::string& value) {
            models::JobLayout layout;
            models::read_option_value(*models::find_layout_field("precision"), value, layout);
            flags.fp8 = layout.runtime.fp8;
          },
          layout_help("precision", "bf16"))
      ->type_name("TEXT");
  for (auto [name, flag] : {std::pair{"overlap-grad-reduce", &flags.overlap_grad_reduce},
                            std::pair{"overlap-param-gather", &flags.overlap_param_gather},
                            std::pair{"grad-reduce-in-bf16", &flags.grad_reduce_in_bf16},
                            std::pair{"moe-a2a-overlap", &flags.moe_a2a_overlap},
                            std::pair{"tp-comm-overlap", &flags.tp_comm_overlap},
                            std::pair{"optimizer-states-in-bf16", &flags.optimizer_states_in_bf16},
                            std::pair{"master-weights-in-bf16", &flags.master_weights_in_bf16},
                            std::pair{"fp8-param-gather", &flags.fp8_param_gather}}) {
    command.add_flag(fmt::format("--{},!--no-{}", name, name), *flag, layout_help(name));
  }
}

void check_overlap_flags(const models::TrainingShape& shape) {
  if ((shape.runtime.overlap_grad_reduce || shape.runtime.overlap_param_gather) && shape.weight_replicas() == 1) {
    throw InputError("--overlap-grad-reduce / --overlap-param-gather hide data-parallel communication: with --dp 1 "
                     "and --cp 1 there is none; drop them or raise --dp");
  }
  if (shape.runtime.tp_comm_overlap && !(shape.sequence_parallel && shape.tp > 1)) {
    throw InputError("--tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters: give "
                     "--sequence-parallel and --tp above 1 with it");
  }
  if ((shape.runtime.overlap_grad_reduce || shape.runtime.overlap_param_gather) && shape.zero >= models::ZeroStage::kGradients &&
      !shape.pipelined) {
    throw InputError(
        "--overlap-grad-reduce / --overlap-param-gather overlap a once-per-step sync: ZeRO-2/3 on one "
        "pipeline rank reduce and gather each micro-batch's beside its passes already; drop them, or use "
        "--zero 1 (or more pipeline ranks, where ZeRO-2/3 sync once per step)");
  }
  if (shape.runtime.overlap_param_gather && !shape.shards_once_per_step()) {
    throw InputError(
        "--overlap-param-gather overlaps the sharded optimizer's weight all-gather: give --zero 1 "
        "with it (or --zero 2/3 with more than one pipeline rank)");
  }
  if (shape.runtime.optimizer_states_in_bf16 && shape.zero != models::ZeroStage::kOptimizer) {
    throw InputError("--optimizer-states-in-bf16 runs inside Megatron's distributed optimizer only (its "
                     "OptimizerConfig asserts so): give --zero 1 with it");
  }
  if (shape.runtime.master_weights_in_bf16 && shape.zero != models::ZeroStage::kOptimizer) {
    throw InputError("--master-weights-in-bf16 is a distributed optimizer's setting (NeMo's distributed_fused_adam): "
                     "give --zero 1 with it");
  }
  if (shape.runtime.overlap_param_gather && !shape.runtime.overlap_grad_reduce) {
    throw InputError("--overlap-param-gather needs --overlap-grad-reduce with it (as Megatron-LM asserts)");
  }
  check_fp8_param_gather(shape.runtime, shape.zero);
}

void check_fp8_param_gather(const models::RuntimeFlags& runtime, std::optional<models::ZeroStage> zero) {
  if (!runtime.fp8_param_gather) return;
  if (!runtime.fp8) {
    throw InputError("--fp8-param-gather keeps the FP8 layers' weights in FP8: give --precision fp8 with it");
  }
  if (zero.value_or(models::ZeroStage::kOptimizer) != models::ZeroStage::kOptimizer) {
    throw InputError("--fp8-param-gather gathers the distributed optimizer's weights in FP8 (Megatron-LM asserts "
                     "it): give --zero 1 with it");
  }
}

void check_parallel_flags(int tp, bool sequence_parallel, int weight_replicas, int zero) {
  if (sequence_parallel && tp == 1) {
    throw InputError("--sequence-parallel splits norms and dropout over the t ranks: with --tp 1 it changes nothing; "
                     "drop it or raise --tp");
  }
  if (zero > 0 && weight_replicas == 1) {
    throw InputError("--zero shards over the d x c data- and context-parallel ranks: with --dp 1 --cp 1 it changes "
                     "nothing; drop it or raise --dp");
  }
}

void resolve_recompute(bool recompute_given, bool modules_given, const models::ModelConfig& model,
                       models::JobLayout& layout) {
  const bool per_stage = !layout.stage_recompute.empty();
  if (recompute_given && modules_given && per_stage &&
      !models::recomputes_selective(models::Recompute::kNone, layout.stage_recompute)) {
    throw InputError("--recompute-modules applies to the selective stages of --recompute, and it lists none");
  }
  if (recompute_given && modules_given && !per_stage && layout.recompute != models::Recompute::kSelective) {
    throw InputError(fmt::format("--recompute-modules recomputes parts of each block: use it with --recompute "
                                 "selective or without --recompute, not with --recompute {}",
                                 models::recompute_name(layout.recompute)));
  }
  if (modules_given && !recompute_given) {
    layout.recompute = models::Recompute::kSelective;
    layout.stage_recompute.clear();
  }
  if (recompute_given && !modules_given) layout.recompute_modules = models::default_recompute_modules(model);
}

void apply_rank_order(const std::string& order, const models::ModelConfig& model, int pipeline_ranks,
                      models::TrainingShape& shape) {
  const bool first = models::parse_megatron_order(order, "--rank-order");
  if (first && (shape.cp > 1 || model.moe.enabled())) {
    throw InputError("--rank-order tp-pp-dp (Megatron's --use-tp-pp-dp-mapping) takes --cp 1 and a model without "
                     "experts, as Megatron asserts");
  }
  if (first && (pipeline_ranks <= 1 || shape.dp <= 1)) {
    throw InputError(fmt::format("--rank-order tp-pp-dp: with p = {} and d = {} both orders place every rank alike; "
                                 "drop it",
                                 pipeline_ranks, shape.dp));
  }
  shape.pipeline_first_ranks = first ? pipeline_ranks : 0;
}

models::TrainingShape training_shape(const ShapeOptions& options, const models::ModelConfig& model,
                                     int pipeline_ranks) {
  models::JobLayout layout = options.layout;
  for (auto [value, name] : {std::pair{layout.micro_batch_size, "--micro-batch-size"}, std::pair{layout.tp, "--tp"},
                             std::pair{layout.cp, "--cp"}, std::pair{layout.dp, "--dp"}, std::pair{layout.ep, "--ep"}}) {
    if (value < 1) throw InputError(fmt::format("{} must be >= 1 (got {})", name, value));
  }
  if (options.seq < 0) throw InputError(fmt::format("--seq must be >= 1 (got {})", options.seq));
  layout.pp = pipeline_ranks;
  models::check_layout_counts(layout);
  // The plan search's default, so that a layout simulated as given is the one planned.
  if (!options.given(options.sequence_parallel)) layout.sequence_parallel = layout.tp > 1;
  check_parallel_flags(layout.tp, layout.sequence_parallel, layout.dp * layout.cp, static_cast<int>(layout.zero));
  resolve_recompute(options.given(options.recompute), options.given(options.recompute_modules), model, layout);
  layout.pipeline_first = false;  // apply_rank_order below, with its checks
  models::TrainingShape shape =
      models::shape_of(layout, options.seq > 0 ? options.seq : std::min(model.context, kDefaultSeqCap));
  models::check_sequence_length(model, shape.seq_len, options.allow_long_context);
  shape.flash_attention = !options.no_flash_attention;
  shape.runtime = layout.runtime;  // as given: check_overlap_flags refuses what cannot apply
  models::check_expert_parallel(model, shape);
  check_overlap_flags(shape);
  if (options.given(options.rank_order)) {
    apply_rank_order(std::string(models::megatron_order_name(options.layout.pipeline_first)), model, pipeline_ranks,
                     shape);
  }
  return shape;
}

void check_memory_cap(std::int64_t cap_bytes, const std::string& given, const models::HardwareConfig& hardware) {
  if (cap_bytes <= 0) throw InputError("--memory-cap must be > 0, e.g. 80GiB");
  if (cap_bytes < (std::int64_t{1} << 20)) {
    throw InputError(fmt::format("--memory-cap {} is {} bytes: give a unit, e.g. 80GiB", given, cap_bytes));
  }
  if (cap_bytes > hardware.gpu.memory_bytes) {
    throw InputError(fmt::format("--memory-cap {} is more than the {} of a {} GPU; give at most that (the default is "
                                 "its usable {})",
                                 given, format_bytes(static_cast<double>(hardware.gpu.memory_bytes)), hardware.name,
                                 format_bytes(static_cast<double>(hardware.gpu.usable_memory_bytes()))));
  }
}

}  // namespace pipeplan::commands
