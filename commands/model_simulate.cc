#include "commands/model_simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "commands/compare_schedules.h"
#include "commands/option_use.h"
#include "common/error.h"
#include "models/expert_parallel.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "planner/model_report.h"
#include "planner/model_simulation.h"
#include "planner/plan_file.h"
#include "planner/plan_replay.h"
#include "profiler/profile_file.h"
#include "sim/generators/registry.h"
#include "sim/search/activation_limit.h"

namespace pipeplan::commands {
namespace {

// Everything one model simulation needs, from the options or from a plan.
struct ModelRun {
  models::ModelConfig model;
  models::HardwareConfig hardware;
  planner::PipelineSetup setup;  // its profile pointer is set when it runs
  std::optional<std::string> layers, layout;  // the split as given; neither: Megatron's even split
  std::string profile_file;
  bool allow_long_context = false;
  std::vector<std::string> overrides;  // for a plan: the options that changed it
  std::vector<std::string> changes;    // for a plan: what the overrides made of its GPUs and global batch
  std::optional<planner::PlanFile> layout_plan = {};  // the plan file whose layout `layout` is
  std::optional<double> plan_predicted_s = {};        // a plan replayed as written: the step time it predicted
};

planner::StageSplit resolve_split(const ModelRun& run, const models::ModelLayers& layers, int stages) {
  if (run.layers && run.layout) throw InputError("give --layers or --layout, not both");
  if (run.layers) {
    const auto counts = planner::parse_layer_counts(*run.layers);
    if (static_cast<int>(counts.size()) != stages) {
      throw InputError(fmt::format("--layers lists {} stages but the pipeline has {} (p x v)", counts.size(), stages));
    }
    return planner::split_from_counts(counts, layers.transformer_layers());
  }
  if (run.layout_plan) return planner::plan_layout_split(*run.layout_plan, layers.transformer_layers(), stages);
  if (run.layout) return planner::split_from_layout(*run.layout, layers.transformer_layers(), stages);
  return planner::even_split(layers.transformer_layers(), stages);
}

// --offload copies over the hardware's host link.
void check_host_link(const SimulateOutputs& outputs, const models::HardwareConfig& hardware) {
  if (!outputs.offload || hardware.host_link.bandwidth > 0) return;
  throw InputError(fmt::format("--offload copies over each GPU's host link, and {} describes none: write a hardware "
                               "file with 'base: {}' and a 'host_link: {{bandwidth: 50GB/s, latency: 10us}}', or "
                               "drop --offload",
                               hardware.name, hardware.name));
}

// A per-stage list names one setting for each of the p x v stages.
void check_stage_recompute_count(const planner::PipelineSetup& setup, std::string_view source) {
  const int stages = setup.pp * setup.virtual_stages;
  if (setup.stage_recompute.empty() || static_cast<int>(setup.stage_recompute.size()) == stages) return;
  throw InputError(fmt::format("{} names {} stages' settings ({}) and the pipeline has {} stages (p x v): give one "
                               "per stage, or one setting for all",
                               source, setup.stage_recompute.size(),
                               models::stage_recompute_name(setup.stage_recompute), stages));
}

int virtual_stages_of(const std::string& schedule, int given) {
  if (given < 0) throw InputError(fmt::format("--virtual must be >= 1, or 0 for the schedule's default (got {})", given));
  return given > 0 ? given : sim::find_schedule_family(schedule).default_virtual_stages;
}

// The GPUs a layout takes, against the hardware file: tensor parallelism
// within a node (its collectives are costed on the node's links), all of it
// within the cluster when the file counts its nodes.
void check_gpus_available(const planner::PipelineSetup& setup, const models::HardwareConfig& hardware) {
  const models::TrainingShape& shape = setup.shape;
  if (shape.tp > hardware.gpus_per_node) {
    throw InputError(fmt::format("--tp {} exceeds the {} GPUs of a {} node: tensor parallelism stays within a node; "
                                 "use --tp {} or less",
                                 shape.tp, hardware.gpus_per_node, hardware.name, hardware.gpus_per_node));
  }
  const long long gpus = static_cast<long long>(shape.tp) * shape.cp * setup.pp * shape.dp;
  const long long available = static_cast<long long>(hardware.nodes) * hardware.gpus_per_node;
  if (hardware.nodes > 0 && gpus > available) {
    throw InputError(fmt::format("t x c x p x d = {} GPUs exceeds {}'s {} GPUs ({} nodes of {})", gpus, hardware.name,
                                 available, hardware.nodes, hardware.gpus_per_node));
  }
}

planner::ModelSimulation simulate_run(ModelRun run, const sim::SimulationOptions& options) {
  models::check_sequence_length(run.model, run.setup.shape.seq_len, run.allow_long_context);
  std::optional<profiler::Profile> profile;
  if (!run.profile_file.empty()) {
    profile = profiler::read_profile_yaml(run.profile_file);
    run.setup.profile = &*profile;
    run.setup.profile_file = run.profile_file;
  }
  run.setup.model_name = run.model.name;
  const models::ModelLayers layers = models::expand_layers(run.model, run.setup.shape);
  run.setup.split = resolve_split(run, layers, run.setup.pp * run.setup.virtual_stages);
  return planner::simulate_model(run.model, run.hardware, run.setup, options);
}

ModelRun run_from_options(const ModelSimulateOptions& options, const ScheduleSource& source,
                          const SimulateOutputs& outputs) {
  if (!options.hardware) throw InputError("--model needs --hardware (e.g. h100-sxm; see `pipeplan hardware list`)");
  ModelRun run{models::load_model(*options.model), models::load_hardware(*options.hardware), {}, options.layers,
               options.layout, options.profile.value_or(""), options.shape.allow_long_context, {}, {}};
  planner::PipelineSetup& setup = run.setup;
  // One setting per stage ("full,full,none,none"): each stage its own,
  // selective ones with --recompute-modules.
  ShapeOptions shape_options = options.shape;
  if (shape_options.recompute && shape_options.recompute->find(',') != std::string::npos) {
    setup.stage_recompute = models::parse_stage_recompute(*shape_options.recompute, "--recompute");
    shape_options.recompute.reset();
  }
  setup.shape = training_shape(shape_options, run.model, source.ranks);
  if (!setup.stage_recompute.empty()) {
    const bool selective = std::find(setup.stage_recompute.begin(), setup.stage_recompute.end(),
                                     models::Recompute::kSelective) != setup.stage_recompute.end();
    if (options.shape.recompute_modules && !selective) {
      throw InputError("--recompute-modules applies to the selective stages of --recompute, and it lists none");
    }
    if (!options.shape.recompute_modules) setup.shape.recompute_modules = models::default_recompute_modules(run.model);
    setup.shape.recompute = models::Recompute::kNone;
  }
  setup.pp = source.ranks;
  if (outputs.memory_cap) check_memory_cap(memory_cap_bytes(outputs), *outputs.memory_cap, run.hardware);
  setup.microbatches = source.microbatches;
  setup.schedule = source.name;
  setup.virtual_stages = source.name == "all" ? source.virtual_stages : virtual_stages_of(source.name, source.virtual_stages);
  setup.microbatch_group_size = source.microbatch_group_size;
  setup.memory_cap_bytes = memory_cap_bytes(outputs);
  setup.explain = options.explain;
  check_stage_recompute_count(setup, "--recompute");
  searches_schedule(source);  // refuses --activation-limit where nothing is searched
  if (source.activation_limit) {
    setup.activation_limit = sim::parse_activation_limit(*source.activation_limit, "--activation-limit");
  }
  check_gpus_available(setup, run.hardware);
  check_host_link(outputs, run.hardware);
  return run;
}

// "llama3-8b on 8 x h100-sxm, t=1 p=4 d=2 ZeRO-1, micro-batch 1 x 8192 tokens{after}, recompute none".
std::string heading(const ModelRun& run, int gpus, const std::string& after_tokens) {
  const models::TrainingShape& shape = run.setup.shape;
  return fmt::format(
      "{} on {} x {}, t={}{} p={} d={}{}{}, micro-batch {} x {} tokens{}, recompute {}{}\n", run.model.name, gpus,
      run.hardware.name, shape.tp, shape.cp > 1 ? fmt::format(" c={}", shape.cp) : "", run.setup.pp, shape.dp,
      run.model.moe.enabled() ? fmt::format(" ep={} etp={}{}", shape.ep, shape.expert_tp(),
                                            shape.moe_dispatcher == models::MoeDispatcher::kDeepEp ? " deepep" : "")
                              : "",
      shape.zero != models::ZeroStage::kNone ? fmt::format(" ZeRO-{}", static_cast<int>(shape.zero)) : "",
      shape.micro_batch_size, shape.seq_len, after_tokens,
      run.setup.stage_recompute.empty()
          ? models::recompute_label(shape.recompute, shape.recompute_modules)
          : models::stage_recompute_label(run.setup.stage_recompute, shape.recompute_modules),
      shape.fp8 ? ", fp8" : "");
}

CommandOutput model_output(const planner::ModelSimulation& result, const ModelRun& run,
                           const SimulateOutputs& outputs) {
  const planner::PipelineSetup& setup = run.setup;
  CommandOutput output;
  output.json = planner::model_simulation_to_json(result);
  output.json["model"] = run.model.name;
  output.json["hardware"] = run.hardware.name;
  output.json["cost_source"] = result.cost_source;
  output.json["precision"] = setup.shape.fp8 ? "fp8" : "bf16";
  // The layout and settings the figures are for, as a plan file names them.
  const models::TrainingShape& shape = setup.shape;
  output.json["tp"] = shape.tp;
  output.json["cp"] = shape.cp;
  output.json["pp"] = setup.pp;
  output.json["dp"] = shape.dp;
  output.json["ep"] = shape.ep;
  output.json["etp"] = shape.expert_tp();
  output.json["moe_dispatcher"] = models::moe_dispatcher_name(shape.moe_dispatcher);
  output.json["moe_a2a_overlap"] = shape.moe_a2a_overlap;
  output.json["zero"] = static_cast<int>(shape.zero);
  output.json["micro_batch_size"] = shape.micro_batch_size;
  output.json["seq"] = shape.seq_len;
  const std::vector<models::Recompute>& stages = setup.stage_recompute;
  output.json["recompute"] = stages.empty() ? std::string(models::recompute_name(shape.recompute)) : "per-stage";
  if (!stages.empty()) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (models::Recompute stage : stages) names.push_back(std::string(models::recompute_name(stage)));
    output.json["stage_recompute"] = std::move(names);
  }
  if (shape.recompute == models::Recompute::kSelective ||
      std::find(stages.begin(), stages.end(), models::Recompute::kSelective) != stages.end()) {
    output.json["recompute_modules"] = models::recompute_modules_name(shape.recompute_modules);
  }
  output.json["sequence_parallel"] = shape.sequence_parallel;
  output.json["overlap_grad_reduce"] = shape.overlap_grad_reduce;
  output.json["overlap_param_gather"] = shape.overlap_param_gather;
  output.json["grad_reduce_in_bf16"] = shape.grad_reduce_in_bf16;
  output.json["tp_comm_overlap"] = shape.tp_comm_overlap;
  output.text = heading(run, result.gpus, "");
  if (!run.overrides.empty()) {
    output.json["plan_overrides"] = run.overrides;
    output.json["plan_changes"] = run.changes;
    output.text += fmt::format("  the plan re-costed with {}{}\n", fmt::join(run.overrides, " "),
                               run.changes.empty() ? "" : fmt::format(": {}", fmt::join(run.changes, ", ")));
  }
  output.text += planner::model_simulation_to_text(result) + fmt::format("  costs: {}\n", result.cost_source);
  if (!result.schedule_note.empty()) {
    output.json["schedule_search"] = result.schedule_note;
    output.text += fmt::format("  schedule: {}\n", result.schedule_note);
  }
  if (run.plan_predicted_s) {
    // A plan replayed as written gives its own figure back, unless the
    // model, the hardware description or pipeplan changed since.
    const double predicted = *run.plan_predicted_s;
    output.json["plan_predicted_iteration_s"] = predicted;
    if (std::abs(result.iteration_time_s - predicted) > 1e-4 * predicted) {
      const std::string note = fmt::format(
          "the plan file predicted {:.3f} ms per iteration, this replay gives {:.3f} ms ({:+.2f} %): the model, the "
          "hardware description or the cost model changed since it was written; plan again to refresh it",
          predicted * 1e3, result.iteration_time_s * 1e3, (result.iteration_time_s / predicted - 1) * 100);
      output.json["notes"].push_back(note);
      output.text += fmt::format("  note: {}\n", note);
    }
  }
  write_simulation_files(result.report, result.schedule, outputs, outputs.gantt, output);
  return output;
}

// The text an option was given with: "--hardware h200-sxm", "--no-flash-attention".
std::string given_text(const CLI::App& command, std::string_view name) {
  for (const CLI::Option* option : command.get_options()) {
    const auto& names = option->get_lnames();
    if (std::find(names.begin(), names.end(), name) == names.end() || option->count() == 0) continue;
    // A flag given in its --no- form reads false.
    if (option->get_expected_min() == 0) return fmt::format("--{}{}", option->as<bool>() ? "" : "no-", name);
    return fmt::format("--{} {}", names.front(), fmt::join(option->results(), ","));
  }
  return "";
}

// What overrides of t, c, p, d, the micro-batch size or count made of the
// plan's GPU count and global batch: said, since the plan was found for those.
std::vector<std::string> scale_changes(const planner::PlanFile& plan, const planner::PipelineSetup& setup) {
  const planner::PlanCandidate& was = plan.plan;
  const models::TrainingShape& shape = setup.shape;
  const int plan_gpus = was.tp * was.cp * was.pp * was.dp;
  const int gpus = shape.tp * shape.cp * setup.pp * shape.dp;
  const int plan_batch = was.micro_batch_size * was.microbatches * was.dp;
  const int batch = shape.micro_batch_size * setup.microbatches * shape.dp;
  std::vector<std::string> changes;
  if (gpus != plan_gpus) changes.push_back(fmt::format("{} GPUs where the plan has {}", gpus, plan_gpus));
  if (batch != plan_batch) changes.push_back(fmt::format("global batch {} where the plan has {}", batch, plan_batch));
  return changes;
}

// The plan's values, then each option the user gave in their place.
ModelRun run_from_plan(const ModelSimulateOptions& options, const ScheduleSource& source,
                       const SimulateOutputs& outputs, const CLI::App& command) {
  const planner::PlanFile plan = planner::read_plan_yaml(*options.plan);
  auto has = [&](std::string_view name) { return given(command, name); };
  // Measured passes belong to the machine that measured them.
  if (!plan.profile.empty() && has("hardware") && !has("profile")) {
    throw InputError(fmt::format("--hardware {}: the plan's pass times were measured ({}); give --profile with "
                                 "that hardware's own profile too",
                                 *options.hardware, plan.profile));
  }
  ModelRun run{models::load_model(plan.model),
               models::load_hardware(has("hardware") ? *options.hardware : plan.hardware),
               {},
               options.layers,
               options.layout,
               has("profile") ? *options.profile : plan.profile,
               options.shape.allow_long_context,
               {},
               {}};
  planner::PipelineSetup& setup = run.setup;
  models::TrainingShape& shape = setup.shape;
  shape = planner::candidate_shape(plan.plan, plan.seq_len);
  shape.pipelined = (has("stages") ? source.ranks : plan.plan.pp) > 1;
  const ShapeOptions& given_shape = options.shape;
  if (has("seq")) shape.seq_len = given_shape.seq > 0 ? given_shape.seq : std::min(run.model.context, kDefaultSeqCap);
  if (has("micro-batch-size")) shape.micro_batch_size = given_shape.micro_batch_size;
  if (has("tp")) shape.tp = given_shape.tp;
  if (has("cp")) shape.cp = given_shape.cp;
  if (has("dp")) shape.dp = given_shape.dp;
  if (has("ep")) shape.ep = given_shape.ep;
  if (has("etp")) {
    if (*given_shape.etp < 1) throw InputError(fmt::format("--etp must be >= 1 (got {})", *given_shape.etp));
    shape.etp = *given_shape.etp;
  }
  const RoutingOptions& routing = given_shape.routing;
  if (has("moe-load-imbalance")) shape.moe_load_imbalance = routing.load_imbalance;
  if (has("moe-capacity-factor")) shape.moe_capacity_factor = routing.capacity_factor;
  if (has("moe-dispatcher")) shape.moe_dispatcher = models::parse_moe_dispatcher(routing.dispatcher);
  if (has("zero")) {
    if (given_shape.zero < 0 || given_shape.zero > 3) {
      throw InputError(fmt::format("--zero must be 0..3 (got {})", given_shape.zero));
    }
    shape.zero = static_cast<models::ZeroStage>(given_shape.zero);
  }
  if (has("sequence-parallel")) shape.sequence_parallel = given_shape.sequence_parallel;
  // A plan recomputing per stage keeps its settings unless an option
  // gives one for every stage.
  setup.stage_recompute = plan.plan.stage_recompute;
  if (has("recompute") || has("recompute-modules")) {
    setup.stage_recompute.clear();
    std::optional<std::string> uniform = has("recompute") ? given_shape.recompute : std::nullopt;
    if (uniform && uniform->find(',') != std::string::npos) {
      setup.stage_recompute = models::parse_stage_recompute(*uniform, "--recompute");
      uniform.reset();
    }
    apply_recompute_options(uniform, given_shape.recompute_modules, run.model, shape);
    if (!setup.stage_recompute.empty()) shape.recompute = models::Recompute::kNone;
  }
  if (has("no-flash-attention")) shape.flash_attention = false;
  const models::RuntimeFlags& given_flags = given_shape.runtime;
  if (has("overlap-grad-reduce")) shape.overlap_grad_reduce = given_flags.overlap_grad_reduce;
  if (has("overlap-param-gather")) shape.overlap_param_gather = given_flags.overlap_param_gather;
  if (has("grad-reduce-in-bf16")) shape.grad_reduce_in_bf16 = given_flags.grad_reduce_in_bf16;
  if (has("tp-comm-overlap")) shape.tp_comm_overlap = given_flags.tp_comm_overlap;
  if (has("precision")) shape.fp8 = given_flags.fp8;
  if (has("moe-a2a-overlap")) shape.moe_a2a_overlap = given_flags.moe_a2a_overlap;
  for (auto [value, name] : {std::pair{shape.micro_batch_size, "--micro-batch-size"}, std::pair{shape.tp, "--tp"},
                             std::pair{shape.cp, "--cp"}, std::pair{shape.dp, "--dp"}}) {
    if (value < 1) throw InputError(fmt::format("{} must be >= 1 (got {})", name, value));
  }
  check_parallel_flags(shape.tp, has("sequence-parallel") && shape.sequence_parallel, shape.weight_replicas(),
                       has("zero") ? static_cast<int>(shape.zero) : 0);
  try {
    models::check_expert_parallel(run.model, shape);
  } catch (const InputError& error) {
    // The values may be the plan file's, not the user's: name the file.
    throw InputError(fmt::format("{}: {} (the plan file's values count where no option replaces them)", *options.plan,
                                 error.what()));
  }
  try {
    check_overlap_flags(shape);
  } catch (const InputError& error) {
    // The flag may be the plan's, not the user's: say how to turn it off.
    throw InputError(fmt::format("{} (the plan file's framework flags count too; the --no- forms turn them off)",
                                 error.what()));
  }
  setup.pp = has("stages") ? source.ranks : plan.plan.pp;
  setup.microbatches = has("microbatches") ? source.microbatches : plan.plan.microbatches;
  setup.schedule = has("schedule") ? source.name : plan.plan.schedule;
  // A looped schedule in place of a looped one keeps the plan's chunks.
  const bool keeps_chunks = !has("virtual") && plan.plan.virtual_stages > 1 &&
                            sim::runs_any_virtual_stages(sim::find_schedule_family(setup.schedule));
  setup.virtual_stages = (has("virtual") || has("schedule")) && !keeps_chunks
                             ? virtual_stages_of(setup.schedule, source.virtual_stages)
                             : plan.plan.virtual_stages;
  setup.microbatch_group_size = source.microbatch_group_size;
  // The plan's cap holds for its own GPU; another GPU's default is its own.
  setup.memory_cap_bytes = outputs.memory_cap ? memory_cap_bytes(outputs) : has("hardware") ? 0 : plan.memory_cap_bytes;
  if (outputs.memory_cap) check_memory_cap(setup.memory_cap_bytes, *outputs.memory_cap, run.hardware);
  setup.explain = options.explain;
  if (source.activation_limit) {
    if (!sim::is_searched(sim::find_schedule_family(setup.schedule))) {
      throw InputError(fmt::format("--activation-limit bounds a searched schedule's activations, and the plan runs {}: "
                                   "drop it or add --schedule ZBAuto",
                                   setup.schedule));
    }
    setup.activation_limit = sim::parse_activation_limit(*source.activation_limit, "--activation-limit");
  }
  check_stage_recompute_count(setup, has("recompute") ? "--recompute" : "the plan's per-stage recompute");
  if (!run.layers && !run.layout) {
    const int stages = plan.plan.pp * plan.plan.virtual_stages;
    if (setup.pp * setup.virtual_stages != stages) {
      throw InputError(fmt::format("the overrides make {} stages (p x v) where the plan's split has {}: give the new "
                                   "split with --layers or --layout",
                                   setup.pp * setup.virtual_stages, stages));
    }
    run.layout = plan.layout;
    run.layout_plan = plan;
  }
  for (std::string_view name : plan_override_options()) {
    if (has(name)) run.overrides.push_back(given_text(command, name));
  }
  // Offload changes what the plan costs (its copies), as an override does.
  if (outputs.offload) run.overrides.push_back("--offload");
  // A searched order is searched within the cap: another cap re-costs it.
  if (outputs.memory_cap && sim::is_searched(sim::find_schedule_family(setup.schedule))) {
    run.overrides.push_back("--memory-cap " + *outputs.memory_cap);
  }
  run.changes = scale_changes(plan, setup);
  if (run.overrides.empty() && plan.plan.iteration_time_s > 0) run.plan_predicted_s = plan.plan.iteration_time_s;
  check_gpus_available(setup, run.hardware);
  check_host_link(outputs, run.hardware);
  return run;
}

// Only DualPipeV of the generated schedules has overlapped pairs.
void check_semantics(const SimulateOutputs& outputs, const std::string& schedule) {
  check_semantics_options(outputs, schedule, sim::find_schedule_family(schedule).name == "DualPipeV");
}

}  // namespace

void add_model_simulate_options(CLI::App& command, ModelSimulateOptions& options) {
  command.add_option("--plan", options.plan,
                     "Replay a plan written by `pipeplan plan --out`; model options given with it override the plan's");
  command.add_option("--model", options.model,
                     "Model zoo name or YAML file: stage costs and memory come from the cost model (needs "
                     "--hardware); see `pipeplan model list`");
  command.add_option("--hardware", options.hardware,
                     "Hardware name or YAML file (see `pipeplan hardware list`)");
  command.add_option("--layers", options.layers,
                     "Transformer layers per stage, e.g. 18,22,22,18 (default: Megatron's even split)");
  command.add_option("--profile", options.profile,
                     "With --model: measured per-layer costs (pipeplan profile) in place of the time model");
  command.add_option("--layout", options.layout,
                     "Megatron pipeline_model_parallel_layout, e.g. 'Et*18|t*22|t*22|t*18L'");
  add_shape_options(command, options.shape, true);
  command.get_option("--recompute")
      ->description("Activation recomputation: none (the default), selective or full; or one per stage, "
                    "comma-separated in stage order (full,full,none,none)");
  command.add_flag("--explain", options.explain,
                   "With --model or --plan: the step time per rank by term (GEMM, attention, elementwise, TP comm, "
                   "CP comm, ZeRO comm, overhead, P2P exposed, bubble, DP sync, optimizer), adding up to the "
                   "iteration");
}

const std::vector<std::string_view>& plan_override_options() {
  static const std::vector<std::string_view> kOptions{"hardware",
                                                      "layers",
                                                      "layout",
                                                      "profile",
                                                      "micro-batch-size",
                                                      "seq",
                                                      "allow-long-context",
                                                      "tp",
                                                      "cp",
                                                      "sequence-parallel",
                                                      "recompute",
                                                      "recompute-modules",
                                                      "no-flash-attention",
                                                      "dp",
                                                      "ep",
                                                      "etp",
                                                      "moe-load-imbalance",
                                                      "moe-capacity-factor",
                                                      "moe-dispatcher",
                                                      "moe-a2a-overlap",
                                                      "zero",
                                                      "overlap-grad-reduce",
                                                      "overlap-param-gather",
                                                      "grad-reduce-in-bf16",
                                                      "tp-comm-overlap",
                                                      "precision",
                                                      "schedule",
                                                      "stages",
                                                      "microbatches",
                                                      "virtual",
                                                      "microbatch-group-size",
                                                      "activation-limit"};
  return kOptions;
}

const std::vector<std::string_view>& model_mode_options() {
  static const std::vector<std::string_view> kOptions = joined({{"model"}, plan_override_options()});
  return kOptions;
}

CommandOutput run_model_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                 const SimulateOutputs& outputs) {
  const ModelRun run = run_from_options(options, source, outputs);
  check_semantics(outputs, run.setup.schedule);
  return model_output(simulate_run(run, simulation_options(outputs, outputs.gantt)), run, outputs);
}

CommandOutput run_model_comparison(const ModelSimulateOptions& options, const ScheduleSource& source,
                                   const SimulateOutputs& outputs) {
  const ModelRun base = run_from_options(options, source, outputs);
  check_semantics_options(outputs, "all", true);
  const RunFamily run_family = [&](const sim::ScheduleFamily& family) {
    ComparedSchedule row{std::string(family.name), std::nullopt, 0, 0, "", ""};
    ModelRun run = base;
    run.setup.schedule = family.name;
    run.setup.virtual_stages =
        virtual_stages_of(row.schedule, compared_virtual_stages(family, source.virtual_stages));
    if (family.name != "Interleaved1F1B") run.setup.microbatch_group_size = 0;
    try {
      planner::ModelSimulation result = simulate_run(run, simulation_options(outputs, false));
      row.iteration_s = result.iteration_time_s;
      row.tokens_per_s = result.tokens_per_s;
      row.cost_source = result.cost_source;
      row.report = std::move(result.report);
    } catch (const InputError& error) {
      row.skipped = error.what();
    }
    return row;
  };
  const planner::PipelineSetup& setup = base.setup;
  const int gpus = setup.shape.tp * setup.shape.cp * setup.pp * setup.shape.dp;
  CommandOutput output = compare_schedules(run_family, outputs, true,
                                           heading(base, gpus, fmt::format(", {} micro-batches", setup.microbatches)));
  output.json["model"] = base.model.name;
  output.json["hardware"] = base.hardware.name;
  return output;
}

CommandOutput run_plan_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                const SimulateOutputs& outputs, const CLI::App& command) {
  const ModelRun run = run_from_plan(options, source, outputs, command);
  check_semantics(outputs, run.setup.schedule);
  return model_output(simulate_run(run, simulation_options(outputs, outputs.gantt)), run, outputs);
}

}  // namespace pipeplan::commands
