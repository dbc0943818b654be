#include "commands/model_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "commands/model_options.h"
#include "commands/option_use.h"
#include "common/error.h"
#include "models/cluster.h"
#include "models/expert_parallel.h"
#include "models/layout_fields.h"
#include "models/model_config.h"
#include "models/placement.h"
#include "models/time_model.h"
#include "planner/plan.h"
#include "planner/report/plan_replay.h"
#include "sim/generators/registry.h"
#include "sim/search/activation_limit.h"

namespace pipeplan::commands {

// --offload copies over the hardware's host link.
void check_host_link(const SimulateOutputs& outputs, const models::HardwareConfig& hardware) {
  if (!outputs.offload || hardware.host_link.bandwidth > 0) return;
  throw InputError(fmt::format("--offload copies over each GPU's host link, and {} describes none: write a hardware "
                               "file with 'base: {}' and a 'host_link: {{bandwidth: 50GB/s, latency: 10us}}', or "
                               "drop --offload",
                               hardware.name, hardware.name));
}

// A per-stage list names one setting for each of the p x v stages.
void check_stage_recompute_count(const step::PipelineSetup& setup, std::string_view source) {
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
// within an NVLink domain unless allowed out (then costed at the network), all of it
// within the cluster when the file counts its nodes.
void check_gpus_available(const step::PipelineSetup& setup, const models::ModelConfig& model,
                          const models::HardwareConfig& hardware, bool allow_cross_node_tp, bool tp_checked) {
  const models::TrainingShape& shape = setup.shape;
  // A size too large for any domain is said before the heads it must
  // divide; one that only straddles domains after them.
  const bool too_large = shape.tp > hardware.local_gpus();
  if (!tp_checked && too_large) models::check_tp_domain(hardware, shape.tp, "--tp", allow_cross_node_tp);
  models::check_tensor_parallel(model, shape.tp);
  if (!tp_checked && !too_large) models::check_tp_domain(hardware, shape.tp, "--tp", allow_cross_node_tp);
  const long long gpus = static_cast<long long>(shape.tp) * shape.cp * setup.pp * shape.dp;
  const long long available = static_cast<long long>(hardware.nodes) * hardware.gpus_per_node;
  if (hardware.nodes > 0 && gpus > available) {
    throw InputError(fmt::format("t x c x p x d = {} GPUs exceeds {}'s {} GPUs ({} nodes of {})", gpus, hardware.name,
                                 available, hardware.nodes, hardware.gpus_per_node));
  }
}

namespace {

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

// The value an option was given as a layout field reads it: a flag's
// "true" or "false", else its values joined by commas.
std::string given_value(const CLI::App& command, std::string_view name) {
  const CLI::Option* option = find_long_option(command, name);
  if (option->get_expected_min() == 0) return option->as<bool>() ? "true" : "false";
  return fmt::format("{}", fmt::join(option->results(), ","));
}

// Fields a replay reads apart: the schedule's, as ScheduleSource parsed
// them (p is --stages there, and v 0 the schedule's default), and the
// recomputation in bubbles, which holds only while something recomputes.
bool reads_apart(const models::LayoutField& field) {
  for (std::string_view key : {"pp", "microbatches", "virtual", "schedule", "recompute_in_bubbles"}) {
    if (field.key == key) return true;
  }
  return false;
}

// What overrides of t, c, p, d, the micro-batch size or count made of the
// plan's GPU count and global batch: said, since the plan was found for those.
std::vector<std::string> scale_changes(const planner::PlanFile& plan, const step::PipelineSetup& setup) {
  const planner::PlanCandidate& was = plan.plan;
  const models::TrainingShape& shape = setup.shape;
  const long long plan_gpus = was.gpus();
  const long long gpus = static_cast<long long>(shape.tp) * shape.cp * setup.pp * shape.dp;
  const long long plan_batch = static_cast<long long>(was.micro_batch_size) * was.microbatches * was.dp;
  const long long batch = static_cast<long long>(shape.micro_batch_size) * setup.microbatches * shape.dp;
  std::vector<std::string> changes;
  if (gpus != plan_gpus) changes.push_back(fmt::format("{} GPUs where the plan has {}", gpus, plan_gpus));
  if (batch != plan_batch) changes.push_back(fmt::format("global batch {} where the plan has {}", batch, plan_batch));
  return changes;
}

}  // namespace

ModelRun run_from_plan(const planner::PlanFile& plan, const ModelSimulateOptions& options,
                       const ScheduleSource& source, const SimulateOutputs& outputs, const CLI::App& command) {
  auto has = [&](std::string_view name) { return given(command, name); };
  // Measured passes belong to the machine that measured them.
  if (!plan.profile.empty() && has("hardware") && !has("profile")) {
    throw InputError(fmt::format("--hardware {}: the plan's pass times were measured ({}); give --profile with "
                                 "that hardware's own profile too",
                                 *options.hardware, plan.profile));
  }
  ModelRun run{models::load_model(plan.model),
               models::load_platform(has("hardware") ? *options.hardware : plan.hardware),
               {},
               options.layers,
               options.layout,
               has("profile") ? *options.profile : plan.profile,
               options.shape.allow_long_context,
               {},
               {}};
  // The plan's own layout, each layout option given read over it through
  // the one table of knobs (models/layout_fields.h).
  planner::PlanCandidate layout = plan.plan;
  for (const models::LayoutField& field : models::layout_fields()) {
    if (reads_apart(field) || !has(field.option)) continue;
    models::read_option_value(field, given_value(command, field.option), layout);
  }
  const ShapeOptions& given_shape = options.shape;
  resolve_recompute(has("recompute"), has("recompute-modules"), run.model, layout);
  const int pipeline_ranks = has("stages") ? source.ranks : plan.plan.pp;
  layout.pp = pipeline_ranks;
  // The plan's order over the pipeline as it now is (where p or d is now 1
  // both orders coincide), unless one is given.
  layout.pipeline_first = layout.pipeline_first && (has("rank-order") || (layout.dp > 1 && pipeline_ranks > 1));
  run.setup = planner::plan_setup(layout, plan.seq_len);
  step::PipelineSetup& setup = run.setup;
  models::TrainingShape& shape = setup.shape;
  if (has("seq")) shape.seq_len = given_shape.seq > 0 ? given_shape.seq : std::min(run.model.context, kDefaultSeqCap);
  if (has("rank-order") || layout.pipeline_first) {
    apply_rank_order(std::string(models::megatron_order_name(layout.pipeline_first)), run.model, pipeline_ranks, shape);
  }
  if (has("no-flash-attention")) shape.flash_attention = false;
  check_parallel_flags(shape.tp, has("sequence-parallel") && shape.sequence_parallel, shape.weight_replicas(),
                       has("zero") ? static_cast<int>(shape.zero) : 0);
  try {
    models::check_expert_parallel(run.model, shape);
  } catch (const InputError& error) {
    // The values may be the plan file's, not the user's: name the file.
    throw InputError(fmt::format("{}: {} (the plan file's values count where no option replaces them)", *options.plan,
                                 error.what()));
  }
  // Every flag as given or planned, not only those that apply: one that
  // cannot is refused, never dropped.
  models::TrainingShape flagged = shape;
  flagged.runtime = layout.runtime;
  try {
    check_overlap_flags(flagged);
  } catch (const InputError& error) {
    // The flag may be the plan's, not the user's: say how to turn it off.
    throw InputError(fmt::format("{} (the plan file's framework flags count too; the --no- forms turn them off)",
                                 error.what()));
  }
  setup.pp = pipeline_ranks;
  if (has("microbatches")) setup.microbatches = source.microbatches;
  if (has("schedule")) setup.schedule = source.name;
  // A looped schedule in place of a looped one keeps the plan's chunks.
  const bool keeps_chunks = !has("virtual") && plan.plan.virtual_stages > 1 &&
                            sim::runs_any_virtual_stages(sim::find_schedule_family(setup.schedule));
  if ((has("virtual") || has("schedule")) && !keeps_chunks) {
    setup.virtual_stages = virtual_stages_of(setup.schedule, source.virtual_stages);
  }
  setup.microbatch_group_size = source.microbatch_group_size;
  // The plan's cap holds for its own GPU; another GPU's default is its own.
  setup.memory_cap_bytes = outputs.memory_cap ? memory_cap_bytes(outputs) : has("hardware") ? 0 : plan.memory_cap_bytes;
  if (outputs.memory_cap) check_memory_cap(setup.memory_cap_bytes, *outputs.memory_cap, run.hardware);
  setup.explain = options.explain;
  // The plan's limit is the one its order was searched within; another
  // schedule drops it, and a given one replaces it.
  if (source.activation_limit) {
    if (!sim::is_searched(sim::find_schedule_family(setup.schedule))) {
      throw InputError(fmt::format("--activation-limit bounds a searched schedule's activations, and the plan runs {}: "
                                   "drop it or add --schedule ZBAuto",
                                   setup.schedule));
    }
    setup.activation_limit = sim::parse_activation_limit(*source.activation_limit, "--activation-limit");
    setup.activation_limit_source = "--activation-limit";
  } else if (has("schedule")) {
    setup.activation_limit.reset();
    setup.activation_limit_source = "--activation-limit";
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
  // A plan's recomputation in the bubbles holds while something recomputes
  // (--recompute none takes it away with the recomputation).
  const bool recomputes = shape.recompute != models::Recompute::kNone ||
                          std::any_of(setup.stage_recompute.begin(), setup.stage_recompute.end(),
                                      [](models::Recompute stage) { return stage != models::Recompute::kNone; });
  setup.recompute_in_bubbles = setup.recompute_in_bubbles && recomputes;
  if (has("recompute-in-bubbles") && outputs.recompute_in_bubbles != setup.recompute_in_bubbles) {
    run.overrides.push_back(outputs.recompute_in_bubbles ? "--recompute-in-bubbles" : "--recompute-in-bubbles=false");
    setup.recompute_in_bubbles = outputs.recompute_in_bubbles;
  }
  // A searched order is searched within the cap: another cap re-costs it.
  if (outputs.memory_cap && sim::is_searched(sim::find_schedule_family(setup.schedule))) {
    run.overrides.push_back("--memory-cap " + *outputs.memory_cap);
  }
  run.changes = scale_changes(plan, setup);
  if (run.overrides.empty() && plan.plan.iteration_time_s > 0) run.plan_predicted_s = plan.plan.iteration_time_s;
  // The plan's own t was checked on its hardware when it was made.
  const bool planned_tp = !has("tp") && !has("hardware");
  check_gpus_available(setup, run.model, run.hardware, options.shape.allow_cross_node_tp,
                       planned_tp && !options.shape.allow_cross_node_tp);
  check_host_link(outputs, run.hardware);
  return run;
}

}  // namespace pipeplan::commands
