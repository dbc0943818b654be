// `pipeplan simulate --model NAME --hardware NAME ...`: stage costs and
// memory from the cost model instead of given times.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/command_output.h"
#include "cli/model_options.h"
#include "cli/schedule_source.h"

namespace pipeplan::cli {

struct ModelSimulateOptions {
  std::optional<std::string> plan;  // a plan YAML from `pipeplan plan --out`
  std::optional<std::string> model;
  std::optional<std::string> hardware;
  std::optional<std::string> layers;  // "18,22,22,18"
  std::optional<std::string> layout;  // Megatron's pipeline_model_parallel_layout
  std::optional<std::string> profile; // measured costs (pipeplan profile)
  ShapeOptions shape;
};

void add_model_simulate_options(CLI::App& command, ModelSimulateOptions& options);

// Files a run writes besides its output.
struct ModelRunOutputs {
  bool no_overlap = false;
  std::optional<std::string> trace_file;
  std::optional<std::string> svg_file;
};

CommandOutput run_model_simulate(const ModelSimulateOptions& options, const ScheduleSource& source,
                                 const ModelRunOutputs& outputs);

// Replays a plan file with the full engine.
CommandOutput run_plan_simulate(const std::string& plan_file, const ModelRunOutputs& outputs);

}  // namespace pipeplan::cli
