// pipeplan: plans and simulates pipeline-parallel training.
// Exit codes: 0 success, 2 bad input (options, files, schedules), 1 internal error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli/argument_check.h"
#include "cli/hardware_command.h"
#include "cli/model_command.h"
#include "cli/plan_command.h"
#include "cli/profile_command.h"
#include "cli/schedule_command.h"
#include "cli/simulate_command.h"
#include "cli/study_command.h"
#include "cli/validate_command.h"
#include "common/error.h"

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pipeplan: plan and simulate pipeline-parallel training (schedules, bubbles, memory)"};
  app.set_version_flag("--version", "pipeplan 0.1.0");
  app.require_subcommand(1);
  pipeplan::cli::register_simulate_command(app);
  pipeplan::cli::register_schedule_command(app);
  pipeplan::cli::register_plan_command(app);
  pipeplan::cli::register_study_command(app);
  pipeplan::cli::register_model_command(app);
  pipeplan::cli::register_hardware_command(app);
  pipeplan::cli::register_profile_command(app);
  pipeplan::cli::register_validate_command(app);
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    pipeplan::cli::check_arguments(app, args);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    std::cerr << fmt::format("pipeplan: error: {}\n", error.what());
    return kExitBadInput;
  } catch (const pipeplan::ScheduleError& error) {
    std::cerr << fmt::format("pipeplan: error: {}\n", error.what());
    if (!error.detail().empty()) std::cerr << error.detail();
    return kExitBadInput;
  } catch (const pipeplan::InputError& error) {
    std::cerr << fmt::format("pipeplan: error: {}\n", error.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "pipeplan: error: out of memory; try a smaller schedule (fewer ranks or micro-batches)\n";
    return kExitInternal;
  } catch (const std::exception& error) {
    std::cerr << fmt::format("pipeplan: internal error: {}\n", error.what());
    return kExitInternal;
  }
  return 0;
}
