#include "cli/model_simulate.h"

#include <fmt/format.h>


#include "cli/output_files.h"
#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "planner/model_report.h"
#include "planner/model_simulation.h"
#include "planner/plan_file.h"
#include "planner/plan_replay.h"
#include "profiler/profile_file.h"
#include "sim/generators/registry.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/svg_gantt.h"

namespace pipeplan::cli {
namespace {

planner::StageSplit resolve_split(const ModelSimulateOptions& options, const models::ModelLayers& layers,
                                  int stages) {
  if (options.layers && options.layout) throw InputError("give --layers or --layout, not both");
  if (options.layers) {
    const auto counts = planner::parse_layer_counts(*options.layers);
    if (static_cast<int>(counts.size()) != stages) {
      throw InputError(fmt::format("--layers lists {} stages but the pipeline has {} (p x v)", counts.size(), stages));
    }
    return planner::split_from_counts(counts, layers.transformer_layers());
  }
  if (options.layout) return planner::split_from_layout(*options.layout, layers.transformer_layers(), stages);
  return planner::even_split(layers.transformer_layers(), stages);
}

sim::SimulationOptions simulation_options(const ModelRunOutputs& outputs) {
  sim::SimulationOptions simulation;
  simulation.overlap_comm = !outputs.no_overlap;
  simulation.record_timeline = outputs.trace_file || outputs.svg_file;
  return simulation;
}

CommandOutput model_output(const planner::ModelSimulation& result, const models::ModelConfig& model,
                           const models::HardwareConfig& hardware, const planner::PipelineSetup& setup,
                           const ModelRunOutputs& outputs) {
  CommandOutput output;
  output.json = planner::model_simulation_to_json(result);
  output.json["model"] = model.name;
  output.json["hardware"] = hardware.name;
  output.json["cost_source"] = result.cost_source;
  output.text = fmt::format("{} on {} x {}, t={} p={} d={}, micro-batch {} x {} tokens, recompute {}\n", model.name,
                            result.gpus, hardware.name, setup.shape.tp, setup.pp, setup.shape.dp,
                            setup.shape.micro_batch_size, setup.shape.seq_len,
                            models::recompute_name(setup.shape.recompute)) +
                planner::model_simulation_to_text(result) + fmt::format("  costs: {}\n", result.cost_source);
  if (outputs.trace_file) write_text_file(*outputs.trace_file, sim::chrome_trace_json(result.report), "--trace");
  if (outputs.svg_file) write_text_file(*outputs.svg_file, sim::svg_gantt(result.report), "--svg");
  return output;
}

}  // namespace

void add_model_simulate_options(CLI::App& command, ModelSimulateOptions& options) {
  command.add_option("--plan", options.plan, "Replay a plan written by `pipeplan plan --out`");
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
}

CommandOutput run_model_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                 const ModelRunOutputs& outputs) {
  if (!options.hardware) throw InputError("--model needs --hardware (e.g. h100-sxm; see `pipeplan hardware list`)");
  if (source.csv_file) throw InputError("--schedule-csv cannot be combined with --model; give --schedule");
  const models::ModelConfig model = models::load_model(*options.model);
  const models::HardwareConfig hardware = models::load_hardware(*options.hardware);
  planner::PipelineSetup setup;
  setup.shape = training_shape(options.shape, model);
  setup.pp = source.ranks;
  setup.microbatches = source.microbatches;
  setup.schedule = source.name;
  setup.virtual_stages = source.virtual_stages > 0 ? source.virtual_stages
                                                   : sim::find_schedule_family(source.name).default_virtual_stages;
  const models::ModelLayers layers = models::expand_layers(model, setup.shape);
  setup.split = resolve_split(options, layers, setup.pp * setup.virtual_stages);
  std::optional<profiler::Profile> profile;
  if (options.profile) {
    profile = profiler::read_profile_yaml(*options.profile);
    setup.profile = &*profile;
    setup.profile_file = *options.profile;
  }
  setup.model_name = model.name;
  const planner::ModelSimulation result = planner::simulate_model(layers, hardware, setup, simulation_options(outputs));
  return model_output(result, model, hardware, setup, outputs);
}

CommandOutput run_plan_simulate(const std::string& plan_file, const ModelRunOutputs& outputs) {
  const planner::PlanFile plan = planner::read_plan_yaml(plan_file);
  const models::ModelConfig model = models::load_model(plan.model);
  const models::HardwareConfig hardware = models::load_hardware(plan.hardware);
  const planner::ModelSimulation result = planner::replay_plan(plan, model, hardware, simulation_options(outputs));
  planner::PipelineSetup setup;
  setup.shape = planner::candidate_shape(plan.plan, plan.seq_len);
  setup.pp = plan.plan.pp;
  return model_output(result, model, hardware, setup, outputs);
}

}  // namespace pipeplan::cli
