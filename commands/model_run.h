// One model simulation's inputs, from `simulate --model` options or from a
// plan file with the options that override it, and the checks both share.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands/model_simulate.h"
#include "commands/schedule_source.h"
#include "commands/simulate_outputs.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "models/recompute.h"
#include "planner/plan_file.h"
#include "step/model_simulation.h"

namespace pipeplan::commands {

// Everything one model simulation needs, from the options or from a plan.
struct ModelRun {
  models::ModelConfig model;
  models::HardwareConfig hardware;
  step::PipelineSetup setup;                  // its profile pointer is set when it runs
  std::optional<std::string> layers, layout;  // the split as given; neither: Megatron's even split
  std::string profile_file;
  bool allow_long_context = false;
  std::vector<std::string> overrides;  // for a plan: the options that changed it
  std::vector<std::string> changes;    // for a plan: what the overrides made of its GPUs and global batch
  std::optional<planner::PlanFile> layout_plan = {};  // the plan file whose layout `layout` is
  std::optional<double> plan_predicted_s = {};        // a plan replayed as written: the step time it predicted
  std::vector<int> segment_tps = {};                  // over several GPU kinds: each segment's t, in order
};

// --offload copies over the hardware's host link: refused where it has none.
void check_host_link(const SimulateOutputs& outputs, const models::HardwareConfig& hardware);
// A per-stage list names one setting for each of the p x v stages;
// `source` names where it came from.
void check_stage_recompute_count(const step::PipelineSetup& setup, std::string_view source);
// The chunks per rank: `given`, or the schedule's default for 0.
int virtual_stages_of(const std::string& schedule, int given);
// Tensor parallelism within an NVLink domain (unless allowed out, or
// `tp_checked`: a plan's own t on its own hardware), all of it within the
// cluster when the hardware counts its nodes.
void check_gpus_available(const step::PipelineSetup& setup, const models::ModelConfig& model,
                          const models::HardwareConfig& hardware, bool allow_cross_node_tp, bool tp_checked);

// The plan's values, then each option the user gave on `command` in their
// place (named in ModelRun::overrides).
ModelRun run_from_plan(const planner::PlanFile& plan, const ModelSimulateOptions& options,
                       const ScheduleSource& source, const SimulateOutputs& outputs, const CLI::App& command);

}  // namespace pipeplan::commands
