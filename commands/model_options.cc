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

void add_shape_options(CLI::App& command, ShapeOptions& options, bool with_data_parallel) {
  command.add_option("--micro-batch-size,-b", options.micro_batch_size, layout_help("micro-batch-size"))
      ->capture_default_str();
  command.add_option("--seq,-s", options.seq,
                     fmt::format("Sequence length in tokens; 0 = the model's context, at most {}", kDefaultSeqCap))
      ->capture_default_str();
  command.add_flag("--allow-long-context", options.allow_long_context, kAllowLongContextHelp);
  command.add_option("--tp,-t", options.tp, layout_help("tp"))->capture_default_str();
  command.add_option("--cp", options.cp, layout_help("cp"))->capture_default_str();
  command.add_flag("--sequence-parallel,!--no-sequence-parallel", options.sequence_parallel,
                   layout_help("sequence-parallel", "off"));
  command.add_option("--recompute", options.recompute, layout_help("recompute", "none"));
  command.add_option("--recompute-modules", options.recompute_modules, layout_help("recompute-modules"));
  command.add_flag("--no-flash-attention", options.no_flash_attention,
                   "Store the attention scores (5as^2b bytes per layer) as without FlashAttention");
  command.add_flag("--allow-cross-node-tp", options.allow_cross_node_tp,
                   "Let t span NVLink domains: its collectives are costed at the network tier they cross");
  if (!with_data_parallel) return;
  command.add_option("--rank-order", options.rank_order, layout_help("rank-order", "tp-cp-ep-dp-pp"));
  command.add_option("--dp,-d", options.dp, layout_help("dp"))->capture_default_str();
  command.add_option("--zero", options.zero, layout_help("zero"))->capture_default_str();
  command.add_option("--ep", options.ep, layout_help("ep"))->capture_default_str();
  add_routing_options(command, options.routing);
  command.add_option("--etp", options.etp, layout_help("etp", "t"));
  add_runtime_flags(command, options.runtime);
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
                            std::pair{"tp-comm-overlap", &flags.tp_comm_overlap}}) {
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
  if (shape.runtime.overlap_param_gather && !shape.runtime.overlap_grad_reduce) {
    throw InputError("--overlap-param-gather needs --overlap-grad-reduce with it (as Megatron-LM asserts)");
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

void apply_recompute_options(const std::optional<std::string>& recompute, const std::optional<std::string>& modules,
                             const models::ModelConfig& model, models::TrainingShape& shape) {
  if (recompute) {
    shape.recompute = models::parse_recompute(*recompute);
    shape.recompute_modules = models::default_recompute_modules(model);
  }
  if (!modules) return;
  if (recompute && shape.recompute != models::Recompute::kSelective) {
    throw InputError(
        fmt::format("--recompute-modules recomputes parts of each block: use it with --recompute "
                    "selective or without --recompute, not with --recompute {}",
                    *recompute));
  }
  shape.recompute = models::Recompute::kSelective;
  shape.recompute_modules = models::parse_recompute_modules(*modules);
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
  for (auto [value, name] : {std::pair{options.micro_batch_size, "--micro-batch-size"}, std::pair{options.tp, "--tp"},
                             std::pair{options.cp, "--cp"}, std::pair{options.dp, "--dp"}}) {
    if (value < 1) throw InputError(fmt::format("{} must be >= 1 (got {})", name, value));
  }
  if (options.seq < 0) throw InputError(fmt::format("--seq must be >= 1 (got {})", options.seq));
  if (options.zero < 0 || options.zero > 3) throw InputError(fmt::format("--zero must be 0..3 (got {})", options.zero));
  check_parallel_flags(options.tp, options.sequence_parallel, options.dp * options.cp, options.zero);
  models::TrainingShape shape;
  shape.micro_batch_size = options.micro_batch_size;
  shape.seq_len = options.seq > 0 ? options.seq : std::min(model.context, kDefaultSeqCap);
  models::check_sequence_length(model, shape.seq_len, options.allow_long_context);
  shape.tp = options.tp;
  shape.cp = options.cp;
  shape.dp = options.dp;
  shape.sequence_parallel = options.sequence_parallel;
  shape.recompute = models::Recompute::kNone;
  apply_recompute_options(options.recompute, options.recompute_modules, model, shape);
  shape.flash_attention = !options.no_flash_attention;
  shape.zero = static_cast<models::ZeroStage>(options.zero);
  shape.pipelined = pipeline_ranks > 1;
  shape.runtime = options.runtime;  // as given: check_overlap_flags refuses what cannot apply
  shape.ep = options.ep;
  if (options.etp && *options.etp < 1) throw InputError(fmt::format("--etp must be >= 1 (got {})", *options.etp));
  shape.etp = options.etp.value_or(0);
  shape.routing = options.routing;
  models::check_expert_parallel(model, shape);
  check_overlap_flags(shape);
  if (options.rank_order) apply_rank_order(*options.rank_order, model, pipeline_ranks, shape);
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
