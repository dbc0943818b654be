// `pipeplan simulate --model NAME --hardware NAME ...` and `simulate --plan
// FILE`: stage costs and memory from the cost model (or a measured profile)
// instead of given times.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "commands/command_output.h"
#include "commands/model_options.h"
#include "commands/schedule_source.h"
#include "commands/simulate_outputs.h"

namespace pipeplan::commands {

struct ModelSimulateOptions {
  std::optional<std::string> plan;  // a plan YAML from `pipeplan plan --out`
  std::optional<std::string> model;
  std::optional<std::string> hardware;
  std::optional<std::string> layers;  // "18,22,22,18"
  std::optional<std::string> layout;  // Megatron's pipeline_model_parallel_layout
  std::optional<std::string> profile; // measured costs (pipeplan profile)
  ShapeOptions shape;
  bool explain = false;  // the step time by term (step/step_terms.h)
};

void add_model_simulate_options(CLI::App& command, ModelSimulateOptions& options);

// The options `--model` mode reads, and those `--plan` mode can override.
const std::vector<std::string_view>& model_mode_options();
const std::vector<std::string_view>& plan_override_options();

CommandOutput run_model_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                 const SimulateOutputs& outputs);

// --schedule all with --model: every schedule family on the model.
CommandOutput run_model_comparison(const ModelSimulateOptions& options, const ScheduleSource& source,
                                   const SimulateOutputs& outputs);

// Replays a plan file with the full engine. Options the user gave on
// `command` override the plan's values (the plan is re-costed with them and
// the output names each override); a change of the stage count needs a new
// split (--layers or --layout).
CommandOutput run_plan_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                const SimulateOutputs& outputs, const CLI::App& command);

}  // namespace pipeplan::commands
