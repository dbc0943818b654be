// pipeplan: plans and simulates pipeline-parallel training.
// Exit codes: 0 success, 2 bad input (options, files, schedules), 1 internal error.
#include <CLI/CLI.hpp>

#include <cstring>

#include "cli/app_runner.h"
#include "cli/help_formatter.h"
#include "cli/calibrate_command.h"
#include "cli/measure_handover.h"
#include "cli/study_command.h"
#include "commands/goodput_command.h"
#include "commands/hardware_command.h"
#include "commands/model_command.h"
#include "commands/plan_command.h"
#include "commands/schedule_command.h"
#include "commands/serve_command.h"
#include "commands/simulate_command.h"

int main(int argc, char** argv) {
  if (argc > 1 && pipeplan::cli::runs_in_measure(argv[1])) return pipeplan::cli::hand_over_to_measure(argv);
  CLI::App app{"pipeplan: plan and simulate pipeline-parallel training (schedules, bubbles, memory)"};
  pipeplan::cli::use_wrapping_help(app);
  app.set_version_flag("--version", pipeplan::cli::kVersion);
  app.require_subcommand(1);
  pipeplan::commands::register_simulate_command(app);
  pipeplan::commands::register_schedule_command(app);
  pipeplan::commands::register_plan_command(app);
  pipeplan::cli::register_study_command(app);
  pipeplan::commands::register_model_command(app);
  pipeplan::commands::register_hardware_command(app);
  pipeplan::cli::register_calibrate_command(app);
  pipeplan::commands::register_goodput_command(app);
  pipeplan::commands::register_serve_command(app);
  // Listed here, run by pipeplan-measure (see `pipeplan profile --help`).
  app.add_subcommand("profile",
                     "Measure a model's layers: forward, input-gradient and weight-gradient times, bytes kept and "
                     "FLOP rate, per micro-batch shape; `profile links` measures point-to-point links");
  app.add_subcommand("validate",
                     "Execute a plan for real (mpirun -np P, one pipeline rank each) and compare the measured "
                     "iteration, bubble and memory with the simulation");
  return pipeplan::cli::run_app(app, argc, argv);
}
