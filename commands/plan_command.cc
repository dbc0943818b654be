#include "commands/plan_command.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "commands/argument_check.h"
#include "commands/framework_files.h"
#include "commands/model_options.h"
#include "commands/option_use.h"
#include "commands/output_files.h"
#include "common/error.h"
#include "common/units.h"
#include "models/cluster.h"
#include "models/placement.h"
#include "models/profile_file.h"
#include "planner/api/make_plan.h"
#include "planner/mixed/mixed_report.h"
#include "planner/plan_file.h"
#include "planner/report/plan_report.h"
#include "planner/report/plan_summary.h"
#include "planner/search/search_space.h"
#include "sim/generators/registry.h"
#include "step/framework_support.h"

namespace pipeplan::commands {
namespace {

struct PlanOptions {
  std::string model;
  std::string hardware;
  int gpus = 0;
  int global_batch = 0;
  int seq = 0;
  std::optional<std::string> memory_cap;
  std::optional<int> tp, cp, pp, dp, micro_batch_size, virtual_stages, zero, ep, etp;
  int mtp_layers = 0;
  models::MoeRouting routing;
  std::optional<std::string> schedule, recompute, recompute_modules;
  bool recompute_in_bubbles = false;
  bool sequence_parallel = false;
  const CLI::Option* sequence_parallel_option = nullptr;  // given or not
  bool allow_long_context = false;
  bool allow_cross_node_tp = false;
  std::optional<std::string> rank_order;
  models::RuntimeFlags runtime;
  std::optional<std::string> layers, layout;
  std::optional<std::string> profile;
  std::string partition = "memory";
  std::string balance_slack = "0.5%";
  std::string objective = "throughput";
  std::string framework = "any";
  std::size_t top = 5;
  std::size_t pareto = 0;  // 0: the whole front
  bool verbose = false;
  int threads = 0;
  bool json = false;
  std::optional<std::string> out;
  FrameworkFiles framework_files;
};

// "0.5%" or "0.005".
double parse_fraction(const std::string& text, const char* option) {
  const bool percent = !text.empty() && text.back() == '%';
  const double value = parse_non_negative(percent ? text.substr(0, text.size() - 1) : text, option);
  return percent ? value / 100 : value;
}

// Options that only some settings read are refused under the others.
void check_option_use(const PlanOptions& options, const CLI::App& command) {
  if (options.mtp_layers < 0) {
    throw InputError(fmt::format("--mtp-layers must be >= 0 (got {}): the multi-token prediction modules to train",
                                 options.mtp_layers));
  }
  if (given(command, "balance-slack") && (options.partition != "memory" || options.objective == "memory")) {
    throw InputError("--balance-slack trades time for memory in --partition memory with --objective throughput; "
                     "drop it here");
  }
  if (given(command, "partition") && (options.layers || options.layout)) {
    throw InputError("--partition chooses the split, which --layers/--layout already give: drop one");
  }
  if (options.allow_cross_node_tp && !options.tp) {
    throw InputError("--allow-cross-node-tp lets a fixed --tp span NVLink domains (the search keeps each group in "
                     "one): give --tp with it");
  }
  if (options.sequence_parallel_option->count() > 0 && options.tp == 1) {
    throw InputError("--sequence-parallel / --no-sequence-parallel apply with t > 1: with --tp 1 they change "
                     "nothing; drop them");
  }
  const bool one_replica = options.dp == 1 && options.cp.value_or(0) == 1;
  if (options.zero && one_replica) {
    throw InputError("--zero shards over the d x c data- and context-parallel ranks: with --dp 1 --cp 1 it changes "
                     "nothing; drop it");
  }
  const models::RuntimeFlags& runtime = options.runtime;
  if ((runtime.overlap_grad_reduce || runtime.overlap_param_gather) && (one_replica || options.gpus == 1)) {
    throw InputError("--overlap-grad-reduce / --overlap-param-gather hide data-parallel communication: with one "
                     "data-parallel rank there is none; drop them");
  }
  for (const auto& [flag, option] : {std::pair{runtime.optimizer_states_in_bf16, "--optimizer-states-in-bf16"},
                                     std::pair{runtime.master_weights_in_bf16, "--master-weights-in-bf16"},
                                     std::pair{runtime.fp8_param_gather, "--fp8-param-gather"}}) {
    if (flag && (one_replica || options.gpus == 1 || options.zero.value_or(1) != 1)) {
      throw InputError(fmt::format("{} runs inside a distributed optimizer only: it needs --zero 1 (or --zero left "
                                   "to the search) and more than one data-parallel rank",
                                   option));
    }
  }
  check_fp8_param_gather(runtime, std::nullopt);  // its optimizer is checked above
  if (runtime.overlap_param_gather && !runtime.overlap_grad_reduce) {
    throw InputError("--overlap-param-gather needs --overlap-grad-reduce with it (as Megatron-LM asserts)");
  }
  if ((runtime.overlap_grad_reduce || runtime.overlap_param_gather) && options.zero.value_or(0) >= 2 &&
      options.pp.value_or(0) == 1) {
    throw InputError(
        "--overlap-grad-reduce / --overlap-param-gather overlap a once-per-step sync: with --zero 2 or 3 "
        "on --pp 1 each micro-batch's is reduced beside its passes; drop them, use --zero 1, or more "
        "pipeline ranks");
  }
  if (runtime.overlap_param_gather && options.zero == 0) {
    throw InputError("--overlap-param-gather overlaps the distributed optimizer's weight gather: not with --zero 0");
  }
  if (runtime.tp_comm_overlap && (options.tp == 1 || (options.sequence_parallel_option->count() > 0 &&
                                                      !options.sequence_parallel))) {
    throw InputError("--tp-comm-overlap overlaps sequence parallelism's collectives: not with --tp 1 or "
                     "--no-sequence-parallel");
  }
}

// `hardware`: what the plan runs on (for a cluster of several kinds, the
// kind with the least memory, which a cap must not exceed).
planner::PlanRequest make_request(const PlanOptions& options, models::HardwareConfig hardware) {
  planner::PlanRequest request;
  request.model = models::load_model(options.model);
  request.hardware = std::move(hardware);
  request.gpus = options.gpus;
  request.global_batch = options.global_batch;
  if (options.seq < 0) throw InputError("--seq must be >= 1");
  request.seq_len = options.seq > 0 ? options.seq : std::min(request.model.context, kDefaultSeqCap);
  models::check_sequence_length(request.model, request.seq_len, options.allow_long_context);
  if (options.memory_cap) {
    const std::int64_t cap = parse_bytes(*options.memory_cap, "--memory-cap");
    check_memory_cap(cap, *options.memory_cap, request.hardware);
    request.memory_cap_bytes = static_cast<double>(cap);
  }
  request.tp = options.tp;
  request.allow_cross_node_tp = options.allow_cross_node_tp;
  if (options.rank_order) request.rank_order = models::parse_megatron_order(*options.rank_order, "--rank-order");
  request.cp = options.cp;
  request.pp = options.pp;
  request.dp = options.dp;
  request.ep = options.ep;
  request.etp = options.etp;
  request.mtp_layers = options.mtp_layers;
  request.routing = options.routing;
  if (options.sequence_parallel_option->count() > 0) request.sequence_parallel = options.sequence_parallel;
  if (options.zero) {
    if (*options.zero < 0 || *options.zero > 3) throw InputError(fmt::format("--zero must be 0..3 (got {})", *options.zero));
    request.zero = static_cast<models::ZeroStage>(*options.zero);
  }
  request.runtime = options.runtime;
  request.micro_batch_size = options.micro_batch_size;
  request.virtual_stages = options.virtual_stages;
  request.schedule = options.schedule;
  if (options.recompute) request.recompute = models::parse_recompute(*options.recompute);
  if (options.recompute_in_bubbles && request.recompute == models::Recompute::kNone) {
    throw InputError("--recompute-in-bubbles runs recomputation apart, and --recompute none has none: drop one");
  }
  if (options.recompute_in_bubbles && options.profile) {
    throw InputError("--recompute-in-bubbles needs recomputation, and a profile's costs are searched without it: "
                     "drop one");
  }
  if (options.recompute_in_bubbles && options.schedule && !planner::is_schedule_set(*options.schedule) &&
      sim::is_searched(sim::find_schedule_family(*options.schedule))) {
    throw InputError(fmt::format("--recompute-in-bubbles applies to generated schedules, and --schedule {} is "
                                 "searched without it: drop one",
                                 *options.schedule));
  }
  if (options.recompute_in_bubbles && options.pp && *options.pp == 1) {
    throw InputError("--recompute-in-bubbles fills the pipeline's bubbles, and --pp 1 has none: drop one");
  }
  request.recompute_in_bubbles = options.recompute_in_bubbles;
  if (options.recompute_modules) {
    if (request.recompute && *request.recompute != models::Recompute::kSelective) {
      throw InputError(
          fmt::format("--recompute-modules recomputes parts of each block: use it with --recompute "
                      "selective or without --recompute, not with --recompute {}",
                      *options.recompute));
    }
    request.recompute_modules = models::parse_recompute_modules(*options.recompute_modules);
  }
  if (options.layers && options.layout) throw InputError("give --layers or --layout, not both");
  if (options.layers) request.layer_counts = step::parse_layer_counts(*options.layers);
  request.layout = options.layout;
  if (options.profile) {
    request.profile = models::read_profile_yaml(*options.profile);
    request.profile_file = *options.profile;
    if (options.tp && *options.tp != request.profile->tp) {
      throw InputError(fmt::format("--tp {} but {} measured t = {}: drop --tp or profile at that size", *options.tp,
                                   *options.profile, request.profile->tp));
    }
  }
  request.partition = step::parse_partition_method(options.partition);
  request.balance_slack = parse_fraction(options.balance_slack, "--balance-slack");
  if (options.objective != "throughput" && options.objective != "memory" && options.objective != "goodput") {
    throw InputError(fmt::format("--objective '{}': use throughput, memory or goodput", options.objective));
  }
  request.objective = options.objective == "memory"    ? planner::Objective::kMemory
                      : options.objective == "goodput" ? planner::Objective::kGoodput
                                                       : planner::Objective::kThroughput;
  request.framework = step::parse_framework(options.framework);
  request.threads = options.threads;
  return request;
}

// The best plan's files, all or none: --out, and each framework's config
// when the best plan runs on one kind (`one_kind`; none: refused).
void write_plan_files(const PlanOptions& options, const planner::PlanFile& file, const planner::PlanReport* one_kind) {
  OutputFiles files;
  if (options.out) files.add(*options.out, planner::write_plan_yaml(file), "--out");
  if (one_kind != nullptr) {
    add_framework_files(options.framework_files, one_kind->torchtitan, one_kind->megatron_bridge, one_kind->deepspeed,
                        files);
  } else {
    refuse_framework_files(options.framework_files,
                           fmt::format("the best plan pipelines over GPU kinds, which neither framework's config "
                                       "describes; plan on one kind (--hardware {}:KIND)",
                                       options.hardware));
  }
  files.write_all();
}

// A cluster of several GPU kinds: each kind alone and pipelines over kinds.
CommandOutput run_mixed_plan(const PlanOptions& options, const models::ClusterConfig& cluster) {
  if (step::parse_framework(options.framework) != step::Framework::kAny) {
    throw InputError(fmt::format("--framework {}: the search over {}'s GPU kinds is not kept to a framework (a pipeline "
                                 "over kinds runs in PyTorch's pipelining); plan one kind with it (--hardware {}:KIND)",
                                 options.framework, options.hardware, options.hardware));
  }
  if (options.pareto > 0) {
    throw InputError("--pareto bounds a single kind's Pareto front, which the report over several GPU kinds does not "
                     "list; drop it");
  }
  const planner::PlanRequest request = make_request(options, planner::kind_with_least_memory(cluster));
  const planner::MixedReport report =
      planner::make_mixed_plan(request, cluster, {options.model, options.hardware}, options.top);
  write_plan_files(options, report.file, report.alone_best ? &*report.alone_best : nullptr);
  return {planner::mixed_report_json(report), planner::mixed_report_text(report, options.verbose)};
}

CommandOutput run_plan(const PlanOptions& options, const CLI::App& command) {
  check_option_use(options, command);
  if (models::is_cluster_description(options.hardware)) {
    const models::ClusterConfig cluster = models::load_cluster(options.hardware);
    if (!cluster.homogeneous()) return run_mixed_plan(options, cluster);
  }
  const planner::PlanRequest request = make_request(options, models::load_platform(options.hardware));
  planner::PlanReport report = planner::make_plan(request, {options.model, options.hardware}, options.top);
  if (options.pareto > 0 && report.search.pareto.size() > options.pareto) report.search.pareto.resize(options.pareto);
  write_plan_files(options, report.file, &report);
  return {planner::plan_report_json(report),
          options.verbose ? planner::plan_report_text(report) : planner::plan_report_summary(report)};
}

}  // namespace

void register_plan_command(CLI::App& app, OutputSink sink) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* command = app.add_subcommand(
      "plan",
      "Search tensor, context, pipeline and data parallelism, micro-batch size, schedule, recomputation and the "
      "layer split for the highest throughput with every GPU under the memory cap");
  command->add_option("--model", options->model, "Model zoo name or YAML file")->required();
  command
      ->add_option("--hardware", options->hardware,
                   "Hardware name or YAML file, or a cluster of one GPU kind (its NVLink domains and network "
                   "tiers cost each group where it lands)")
      ->required();
  command->add_option("--gpus", options->gpus, "GPUs in all (t x c x p x d)")->required();
  command
      ->add_option("--global-batch", options->global_batch, "Sequences per iteration (global_batch_size), at most 2^20")
      ->required();
  command->add_option("--seq", options->seq, "Sequence length; 0 = the model's context, at most 8192")
      ->capture_default_str();
  command->add_flag("--allow-long-context", options->allow_long_context, kAllowLongContextHelp);
  command->add_option("--memory-cap", options->memory_cap,
                      "Peak memory per GPU allowed, e.g. 80GiB [default: the GPU's usable memory]");
  command->add_option("--tp", options->tp, layout_help("tp", "searched"));
  command->add_flag("--allow-cross-node-tp", options->allow_cross_node_tp,
                    "Let a fixed --tp span NVLink domains: its collectives are costed at the network tier they cross");
  command->add_option("--rank-order", options->rank_order,
                      layout_help("rank-order", "both where some group leaves the NVLink domain"));
  command->add_option("--cp", options->cp, layout_help("cp", "searched"));
  command->add_option("--pp", options->pp, layout_help("pp", "searched"));
  command->add_option("--dp", options->dp, layout_help("dp", "searched"));
  command->add_option("--ep", options->ep,
                      layout_help("ep", "searched, every ep dividing the experts and t x c x d / etp"));
  command->add_option("--etp", options->etp, layout_help("etp", "searched, 1 or t"));
  command->add_option("--mtp-layers", options->mtp_layers, layout_help("mtp-layers", "0"));
  add_routing_options(*command, options->routing);
  options->sequence_parallel_option =
      command->add_flag("--sequence-parallel,!--no-sequence-parallel", options->sequence_parallel,
                        layout_help("sequence-parallel", "on with t > 1, Megatron's advice"));
  command->add_option("--zero", options->zero, layout_help("zero", "searched"));
  add_runtime_flags(*command, options->runtime);
  command->add_option("--micro-batch-size", options->micro_batch_size, layout_help("micro-batch-size", "searched"));
  command->add_option("--schedule", options->schedule,
                      layout_help("schedule", "searched; also a comma list (1F1B,Interleaved1F1B) or a set: auto (the "
                                              "search and ZBAuto, the order searched for each candidate's costs), "
                                              "zero-bubble, looped, v-shape"));
  command->add_option("--virtual", options->virtual_stages, layout_help("virtual", "searched"));
  command->add_option("--recompute", options->recompute, layout_help("recompute", "searched, one setting for all"));
  command->add_flag("--recompute-in-bubbles", options->recompute_in_bubbles,
                    layout_help("recompute-in-bubbles", "off; on: tried beside each recomputing candidate"));
  command->add_option("--recompute-modules", options->recompute_modules, layout_help("recompute-modules"));
  command->add_option("--layers", options->layers,
                      "Evaluate this split (transformer layers per stage, e.g. 18,22,22,18) instead of searching one");
  command->add_option("--layout", options->layout, "Evaluate this Megatron layout, e.g. 'Et*18|t*22|t*22|t*18L'");
  command->add_option("--profile", options->profile,
                      "Measured per-layer costs (pipeplan profile) in place of the time model");
  command->add_option("--partition", options->partition,
                      "Split method: uniform, parameters, time or memory (time-optimal under the cap)")
      ->capture_default_str();
  command->add_option("--balance-slack", options->balance_slack,
                      "With --partition memory: how much slower the slowest stage may get to lower the largest "
                      "stage's peak memory (e.g. 0.5% or 0)")
      ->capture_default_str();
  command->add_option("--objective", options->objective,
                      "throughput (tokens/s), memory (lowest peak) or goodput (tokens/s once failures, restarts and "
                      "checkpoints count: the hardware's reliability, see `pipeplan goodput`)")
      ->capture_default_str();
  command->add_option("--framework", options->framework,
                      fmt::format("Keep to the layouts this framework runs as planned ({}); any: search them all and "
                                  "list each framework's best",
                                  step::framework_keys()))
      ->capture_default_str();
  command->add_option("--top", options->top, "Alternatives to list")
      ->check(whole_number_at_least(1))
      ->capture_default_str();
  command->add_option("--threads", options->threads, "Worker threads; 0 = all cores")
      ->check(whole_number_at_least(0))
      ->capture_default_str();
  command->add_option("--pareto", options->pareto,
                      "Plans of the Pareto front (time against memory) to list, fastest first; 0 = all")
      ->check(whole_number_at_least(0))
      ->capture_default_str();
  command->add_flag("--verbose", options->verbose,
                    "The whole report: every rank's memory and layers, the Pareto front, the rank placement and "
                    "each framework's config");
  command->add_flag("--json", options->json, "Print one JSON object");
  command->add_option("--out", options->out, "Write the best plan as YAML (replay: pipeplan simulate --plan FILE)");
  add_framework_file_options(*command, options->framework_files);
  command->callback([options, sink, command] { sink(run_plan(*options, *command), options->json); });
}

}  // namespace pipeplan::commands
