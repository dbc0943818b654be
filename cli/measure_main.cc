// pipeplan-measure: the commands that run real layers, `pipeplan profile`
// and `pipeplan validate` (pipeplan hands them over to this program).
#include <CLI/CLI.hpp>

#include "cli/app_runner.h"
#include "cli/help_formatter.h"
#include "cli/profile_command.h"
#include "cli/validate_command.h"

int main(int argc, char** argv) {
  CLI::App app{"pipeplan: measure layers and links, and execute plans for real"};
  app.name("pipeplan");
  pipeplan::cli::use_wrapping_help(app);
  app.set_version_flag("--version", pipeplan::cli::kVersion);
  app.require_subcommand(1);
  pipeplan::cli::register_profile_command(app);
  pipeplan::cli::register_validate_command(app);
  return pipeplan::cli::run_app(app, argc, argv);
}
