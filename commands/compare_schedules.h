// `pipeplan simulate --schedule all`: every schedule family on the same
// shape and costs (given times or a model on hardware), side by side in one
// table and, with --svg, one chart of stacked Gantts on one time scale.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "commands/command_output.h"
#include "commands/simulate_outputs.h"
#include "sim/generators/registry.h"
#include "sim/simulate.h"

namespace pipeplan::commands {

struct ComparedSchedule {
  std::string schedule;
  std::optional<sim::SimulationReport> report;
  double iteration_s = 0;  // the whole step: with a model, also gradient sync and optimizer
  double tokens_per_s = 0; // with a model
  std::string skipped;     // why it did not run
  std::string cost_source; // where its costs came from, when it ran
};

// One family's row; a family whose preconditions the shape breaks is a row
// with the reason (the runner catches InputError).
using RunFamily = std::function<ComparedSchedule(const sim::ScheduleFamily& family)>;

// Multi-chunk families run at `virtual_stages` (0: their default).
int compared_virtual_stages(const sim::ScheduleFamily& family, int virtual_stages);

// `model`: the rows carry a model's step time and tokens per second. The
// text starts with `heading`.
CommandOutput compare_schedules(const RunFamily& run, const SimulateOutputs& outputs, bool model,
                                const std::string& heading = "");

}  // namespace pipeplan::commands
