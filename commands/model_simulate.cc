#include "commands/model_simulate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "commands/compare_schedules.h"
#include "commands/model_run.h"
#include "commands/option_use.h"
#include "common/error.h"
#include "common/text_wrap.h"
#include "common/units.h"
#include "models/cluster.h"
#include "models/expert_parallel.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/layout_fields.h"
#include "models/placement.h"
#include "models/profile_file.h"
#include "planner/mixed/mixed_report.h"
#include "planner/plan_file.h"
#include "planner/report/plan_replay.h"
#include "sim/generators/registry.h"
#include "sim/memory_fit.h"
#include "sim/search/activation_limit.h"
#include "step/model_report.h"
#include "step/model_simulation.h"

namespace pipeplan::commands {
namespace {

step::StageSplit resolve_split(const ModelRun& run, const models::ModelLayers& layers, int stages) {
  if (run.layers && run.layout) throw InputError("give --layers or --layout, not both");
  if (run.layers) {
    const auto counts = step::parse_layer_counts(*run.layers);
    if (static_cast<int>(counts.size()) != stages) {
      throw InputError(fmt::format("--layers lists {} stages but the pipeline has {} (p x v)", counts.size(), stages));
    }
    return step::split_from_counts(counts, layers.transformer_layers());
  }
  if (run.layout_plan) return planner::plan_layout_split(*run.layout_plan, layers.transformer_layers(), stages);
  if (run.layout) {
    return step::split_from_layout(*run.layout, layers.transformer_layers(), stages, run.setup.shape.mtp_layers);
  }
  return step::even_split(layers.transformer_layers(), stages);
}

step::ModelSimulation simulate_run(ModelRun run, const sim::SimulationOptions& options) {
  models::check_sequence_length(run.model, run.setup.shape.seq_len, run.allow_long_context);
  std::optional<models::Profile> profile;
  if (!run.profile_file.empty()) {
    profile = models::read_profile_yaml(run.profile_file);
    run.setup.profile = &*profile;
    run.setup.profile_file = run.profile_file;
  }
  run.setup.model_name = run.model.name;
  const models::ModelLayers layers = models::expand_layers(run.model, run.setup.shape);
  run.setup.split = resolve_split(run, layers, run.setup.pp * run.setup.virtual_stages);
  return step::simulate_model(run.model, run.hardware, run.setup, options);
}

ModelRun run_from_options(const ModelSimulateOptions& options, const ScheduleSource& source,
                          const SimulateOutputs& outputs) {
  if (!options.hardware) throw InputError("--model needs --hardware (e.g. h100-sxm; see `pipeplan hardware list`)");
  ModelRun run{models::load_model(*options.model), models::load_platform(*options.hardware), {}, options.layers,
               options.layout, options.profile.value_or(""), options.shape.allow_long_context, {}, {}};
  step::PipelineSetup& setup = run.setup;
  // One setting per stage ("full,full,none,none"): each stage its own,
  // selective ones with --recompute-modules.
  setup.shape = training_shape(options.shape, run.model, source.ranks);
  setup.stage_recompute = options.shape.layout.stage_recompute;
  setup.pp = source.ranks;
  if (outputs.memory_cap) check_memory_cap(memory_cap_bytes(outputs), *outputs.memory_cap, run.hardware);
  setup.microbatches = source.microbatches;
  setup.schedule = source.name;
  setup.virtual_stages = source.name == "all" ? source.virtual_stages : virtual_stages_of(source.name, source.virtual_stages);
  setup.microbatch_group_size = source.microbatch_group_size;
  models::JobLayout counted = options.shape.layout;  // with the schedule's p, m and v
  counted.pp = setup.pp;
  counted.microbatches = setup.microbatches;
  counted.virtual_stages = setup.virtual_stages;
  models::check_layout_counts(counted);
  setup.memory_cap_bytes = memory_cap_bytes(outputs);
  setup.explain = options.explain;
  check_stage_recompute_count(setup, "--recompute");
  searches_schedule(source);  // refuses --activation-limit where nothing is searched
  if (source.activation_limit) {
    setup.activation_limit = sim::parse_activation_limit(*source.activation_limit, "--activation-limit");
  }
  check_gpus_available(setup, run.model, run.hardware, options.shape.allow_cross_node_tp, false);
  check_host_link(outputs, run.hardware);
  return run;
}

// "llama3-8b on 8 x h100-sxm, t=1 p=4 d=2 ZeRO-1, micro-batch 1 x 8192 tokens{after}, recompute none".
std::string heading(const ModelRun& run, int gpus, const std::string& after_tokens) {
  const models::TrainingShape& shape = run.setup.shape;
  return fmt::format(
      "{} on {} x {}, t={}{} p={} d={}{}{}, micro-batch {} x {} tokens{}{}, recompute {}{}\n", run.model.name, gpus,
      run.hardware.name,
      run.segment_tps.empty() ? fmt::to_string(shape.tp) : fmt::format("{}", fmt::join(run.segment_tps, "/")),
      shape.cp > 1 ? fmt::format(" c={}", shape.cp) : "", run.setup.pp, shape.dp,
      run.model.moe.enabled() ? fmt::format(" ep={} etp={}{}", shape.ep, shape.expert_tp(),
                                            shape.routing.dispatcher == models::MoeDispatcher::kDeepEp ? " deepep" : "")
                              : "",
      shape.zero != models::ZeroStage::kNone ? fmt::format(" ZeRO-{}", static_cast<int>(shape.zero)) : "",
      shape.micro_batch_size, shape.seq_len, after_tokens,
      shape.sequence_parallel && shape.tp > 1 ? ", sequence parallel" : "",
      run.setup.stage_recompute.empty()
          ? models::recompute_label(shape.recompute, shape.recompute_modules)
          : models::stage_recompute_label(run.setup.stage_recompute, shape.recompute_modules),
      shape.runtime.fp8 ? ", fp8" : "");
}

// Sequences a step of the setup trains on: b x m x d.
long long shape_global_batch(const step::PipelineSetup& setup) {
  return static_cast<long long>(setup.shape.micro_batch_size) * setup.microbatches * setup.shape.dp;
}

CommandOutput model_output(const step::ModelSimulation& result, const ModelRun& run, const SimulateOutputs& outputs) {
  const step::PipelineSetup& setup = run.setup;
  CommandOutput output;
  output.json = step::model_simulation_to_json(result);
  output.json["model"] = run.model.name;
  output.json["hardware"] = run.hardware.name;
  output.json["cost_source"] = result.cost_source;
  output.json["precision"] = setup.shape.runtime.fp8 ? "fp8" : "bf16";
  // The layout and settings the figures are for, as a plan file names them.
  const models::TrainingShape& shape = setup.shape;
  output.json["tp"] = shape.tp;
  output.json["cp"] = shape.cp;
  output.json["pp"] = setup.pp;
  output.json["dp"] = shape.dp;
  output.json["rank_order"] = models::megatron_order_name(shape.pipeline_first_ranks > 0);
  output.json["ep"] = shape.ep;
  output.json["etp"] = shape.expert_tp();
  output.json["moe_dispatcher"] = models::moe_dispatcher_name(shape.routing.dispatcher);
  output.json["moe_a2a_overlap"] = shape.runtime.moe_a2a_overlap;
  output.json["zero"] = static_cast<int>(shape.zero);
  output.json["micro_batch_size"] = shape.micro_batch_size;
  output.json["seq"] = shape.seq_len;
  const std::vector<models::Recompute>& stages = setup.stage_recompute;
  output.json["recompute"] = stages.empty() ? std::string(models::recompute_name(shape.recompute)) : "per-stage";
  if (!stages.empty()) output.json["stage_recompute"] = models::stage_recompute_names(stages);
  if (models::recomputes_selective(shape.recompute, stages)) {
    output.json["recompute_modules"] = models::recompute_modules_name(shape.recompute_modules);
  }
  output.json["sequence_parallel"] = shape.sequence_parallel;
  output.json["overlap_grad_reduce"] = shape.runtime.overlap_grad_reduce;
  output.json["overlap_param_gather"] = shape.runtime.overlap_param_gather;
  output.json["grad_reduce_in_bf16"] = shape.runtime.grad_reduce_in_bf16;
  output.json["optimizer_states_in_bf16"] = shape.runtime.optimizer_states_in_bf16;
  output.json["master_weights_in_bf16"] = shape.runtime.master_weights_in_bf16;
  output.json["fp8_param_gather"] = shape.runtime.fp8_param_gather;
  output.json["tp_comm_overlap"] = shape.runtime.tp_comm_overlap;
  output.text = heading(run, result.gpus, "");
  if (!run.overrides.empty()) {
    output.json["plan_overrides"] = run.overrides;
    output.json["plan_changes"] = run.changes;
    output.text += fmt::format("  the plan re-costed with {}{}\n", fmt::join(run.overrides, " "),
                               run.changes.empty() ? "" : fmt::format(": {}", fmt::join(run.changes, ", ")));
  }
  output.text += step::model_simulation_to_text(result) + fmt::format("  costs: {}\n", result.cost_source);
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
          "the plan file predicted {} per iteration, this replay gives {} ({:+.2f} %): the model, the "
          "hardware description or the cost model changed since it was written; plan again to refresh it",
          format_duration(predicted), format_duration(result.iteration_time_s),
          (result.iteration_time_s / predicted - 1) * 100);
      output.json["notes"].push_back(note);
      output.text += fmt::format("  note: {}\n", note);
    }
  }
  const std::vector<sim::RankOverMemory> over = sim::ranks_over_memory(result.report);
  // The state alone (weights, gradients, optimizer) over the limit: no
  // split, schedule or recomputation of this layout can fit.
  std::optional<std::size_t> state_over;
  for (std::size_t rank = 0; rank < result.memory.size(); ++rank) {
    const step::MemoryBreakdown& m = result.memory[rank];
    if (!state_over && m.weights + m.gradients + m.optimizer > result.report.memory_limit_bytes) state_over = rank;
  }
  if (!over.empty() && state_over && result.report.memory_limit_bytes > 0 && run.segment_tps.empty()) {
    output.text += wrap(fmt::format("  rank {}'s weights, gradients and optimizer state alone are over the limit: more "
                                    "GPUs (--tp, --pp, --dp) or ZeRO (--zero) are needed",
                                    *state_over),
                        "    ");
  } else if (!over.empty() && run.segment_tps.empty()) {
    // The plan command searches the split, micro-batches, schedule and
    // recomputation of this layout under the cap.
    // A command to paste: its lines joined by the shell's continuation.
    std::string command = wrap(fmt::format(
        "    pipeplan plan --model {} --hardware {} --gpus {} --global-batch {} --seq {} --tp {} --cp {} --pp {} --dp {}{}",
        run.model.name, run.hardware.name, result.gpus, shape_global_batch(setup), setup.shape.seq_len, setup.shape.tp,
        setup.shape.cp, setup.pp, setup.shape.dp, run.model.moe.enabled() ? fmt::format(" --ep {}", setup.shape.ep) : ""),
        "      ", kTextWidth - 2);
    for (std::size_t at = command.find('\n'); at + 1 < command.size(); at = command.find('\n', at + 3)) {
      command.insert(at, " \\");
    }
    output.text += "  to find what fits with this layout (split, micro-batches, schedule, recomputation):\n" + command;
  }
  write_simulation_files(result.report, result.schedule, outputs, outputs.gantt, output);
  return output;
}

// Only DualPipeV of the generated schedules has overlapped pairs.
void check_semantics(const SimulateOutputs& outputs, const std::string& schedule) {
  check_semantics_options(outputs, schedule, sim::find_schedule_family(schedule).name == "DualPipeV");
}

}  // namespace

void add_model_simulate_options(CLI::App& command, ModelSimulateOptions& options) {
  command.add_option("--plan", options.plan,
                     "Replay a plan written by `pipeplan plan --out`; model options given with it override the plan's "
                     "(a flag's --no- form turns off what the plan has on)");
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
      ->description(fmt::format("{}; or one per stage, comma-separated in stage order (full,full,none,none) "
                                "[default: none]",
                                layout_help("recompute")));
  command.add_flag("--explain", options.explain,
                   "With --model or --plan: the step time per rank by term (GEMM, attention, elementwise, TP comm, "
                   "CP comm, ZeRO comm, overhead, P2P exposed, bubble, DP sync, optimizer), adding up to the "
                   "iteration");
}

const std::vector<std::string_view>& plan_override_options() {
  static const std::vector<std::string_view> kOptions = [] {
    std::vector<std::string_view> options{"hardware", "layers", "layout", "profile", "seq", "allow-long-context",
                                          "allow-cross-node-tp", "no-flash-attention"};
    // Every knob of the layout: p is --stages here, and the recomputation
    // in bubbles is an option of every mode (SimulateOutputs).
    for (const models::LayoutField& field : models::layout_fields()) {
      if (field.key != "pp" && field.key != "recompute_in_bubbles") options.push_back(field.option);
    }
    options.insert(options.end(), {"stages", "microbatch-group-size", "activation-limit"});
    return options;
  }();
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
      step::ModelSimulation result = simulate_run(run, simulation_options(outputs, false));
      row.iteration_s = result.iteration_time_s;
      row.tokens_per_s = result.tokens_per_s;
      row.cost_source = result.cost_source;
      row.report = std::move(result.report);
    } catch (const InputError& error) {
      row.skipped = error.what();
    }
    return row;
  };
  const step::PipelineSetup& setup = base.setup;
  const int gpus = setup.shape.tp * setup.shape.cp * setup.pp * setup.shape.dp;
  CommandOutput output = compare_schedules(run_family, outputs, true,
                                           heading(base, gpus, fmt::format(", {} micro-batches", setup.microbatches)));
  output.json["model"] = base.model.name;
  output.json["hardware"] = base.hardware.name;
  return output;
}

namespace {

// A plan over several GPU kinds, replayed as written: its kinds, t and
// split are the plan's, so options that would change them are refused.
CommandOutput replay_mixed_plan(const planner::PlanFile& plan, const ModelSimulateOptions& options,
                                const SimulateOutputs& outputs, const CLI::App& command) {
  for (std::string_view option : plan_override_options()) {
    if (given(command, option)) {
      throw InputError(fmt::format("--{}: a plan over several GPU kinds replays as written (its kinds, t and split are "
                                   "the plan's); drop --{}, or plan again with it",
                                   option, option));
    }
  }
  if (options.explain) {
    throw InputError("--explain divides one kind's step into its terms, and this plan runs over several kinds: drop it");
  }
  for (const auto& [flag, on] : {std::pair{"--offload", outputs.offload},
                                 std::pair{"--recompute-in-bubbles", outputs.recompute_in_bubbles}}) {
    if (on) throw InputError(fmt::format("{}: a plan over several GPU kinds replays as written; drop it", flag));
  }
  const models::ClusterConfig cluster = models::load_cluster(plan.hardware);
  const std::vector<planner::KindPool> pools = planner::kind_pools(cluster);
  planner::MixedPipeline pipeline;
  for (const planner::PlanSegment& segment : plan.segments) {
    const auto pool = std::find_if(pools.begin(), pools.end(),
                                   [&](const planner::KindPool& p) { return p.kind == segment.kind; });
    if (pool == pools.end()) {
      std::vector<std::string> kinds;
      for (const planner::KindPool& known : pools) kinds.push_back(known.kind);
      throw InputError(fmt::format("{}: segment {} of 'segments' names {}, and cluster {} has no such kind: use one of {}",
                                   *options.plan, pipeline.segments.size() + 1, segment.kind, cluster.name,
                                   fmt::join(kinds, ", ")));
    }
    pipeline.segments.push_back({static_cast<std::size_t>(pool - pools.begin()), segment.stages, segment.tp});
  }
  const models::ModelConfig model = models::load_model(plan.model);
  ModelRun run{model, pools[pipeline.segments.front().pool].hardware, planner::mixed_setup(plan.plan, plan.seq_len),
               std::nullopt, std::nullopt, "", false, {}, {}};
  run.hardware.name = cluster.name;
  for (const planner::PlanSegment& segment : plan.segments) run.segment_tps.push_back(segment.tp);
  // A cap is each rank's: no more than the smallest kind's memory.
  if (outputs.memory_cap) {
    for (const planner::KindPool& pool : pools) check_memory_cap(memory_cap_bytes(outputs), *outputs.memory_cap, pool.hardware);
  }
  run.setup.memory_cap_bytes = outputs.memory_cap ? memory_cap_bytes(outputs) : plan.memory_cap_bytes;
  run.setup.split = plan.layout.empty()
                        ? plan.plan.split
                        : planner::plan_layout_split(plan, model.layers, plan.plan.pp * plan.plan.virtual_stages);
  if (plan.plan.iteration_time_s > 0) run.plan_predicted_s = plan.plan.iteration_time_s;
  check_semantics(outputs, run.setup.schedule);
  const step::ModelSimulation result = planner::simulate_mixed(model, pools, cluster.tiers, pipeline, run.setup,
                                                               simulation_options(outputs, outputs.gantt));
  CommandOutput output = model_output(result, run, outputs);
  std::vector<std::string> segments;
  nlohmann::ordered_json listed = nlohmann::ordered_json::array();
  for (const planner::PlanSegment& segment : plan.segments) {
    segments.push_back(fmt::format("{} stage{} on {} (t={})", segment.stages, segment.stages == 1 ? "" : "s",
                                   segment.kind, segment.tp));
    listed.push_back({{"kind", segment.kind}, {"stages", segment.stages}, {"tp", segment.tp}});
  }
  output.json["segments"] = std::move(listed);
  const std::size_t heading_end = output.text.find('\n') + 1;
  output.text.insert(heading_end, fmt::format("  over kinds: {}; {}\n", fmt::join(segments, ", then "),
                                              planner::mixed_framework_line(pipeline)));
  return output;
}

}  // namespace

CommandOutput run_plan_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                const SimulateOutputs& outputs, const CLI::App& command) {
  const planner::PlanFile plan = planner::read_plan_yaml(*options.plan);
  if (!plan.segments.empty()) return replay_mixed_plan(plan, options, outputs, command);
  const ModelRun run = run_from_plan(plan, options, source, outputs, command);
  check_semantics(outputs, run.setup.schedule);
  return model_output(simulate_run(run, simulation_options(outputs, outputs.gantt)), run, outputs);
}

}  // namespace pipeplan::commands
