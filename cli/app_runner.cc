#include "cli/app_runner.h"

#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/launcher.h"
#include "commands/argument_check.h"
#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::cli {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

// Under mpirun every rank reads the same command line: rank 0 alone answers
// it (help, a bad argument), so each line is printed once. The others exit 0:
// mpirun stops the whole job, rank 0 too, when a rank fails first, and the
// job's status is rank 0's.
bool another_rank_answers() { return launcher_rank() > 0; }

}  // namespace

int run_app(CLI::App& app, int argc, char** argv) {
  const bool quiet = another_rank_answers();
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    commands::check_arguments(app, args);
  } catch (const InputError& error) {
    if (quiet) return 0;
    std::cerr << fmt::format("pipeplan: error: {}\n", one_line(error.what()));
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return quiet ? 0 : app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return quiet ? 0 : app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return quiet ? 0 : app.exit(version);
  } catch (const CLI::ParseError& error) {
    if (quiet) return 0;
    std::cerr << fmt::format("pipeplan: error: {}\n", commands::parse_error_text(error));
    return kExitBadInput;
  } catch (const ScheduleError& error) {
    std::cerr << fmt::format("pipeplan: error: {}\n", one_line(error.what()));
    if (!error.detail().empty()) std::cerr << error.detail();
    return kExitBadInput;
  } catch (const InputError& error) {
    std::cerr << fmt::format("pipeplan: error: {}\n", one_line(error.what()));
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "pipeplan: error: out of memory; try a smaller schedule (fewer ranks or micro-batches)\n";
    return kExitInternal;
  } catch (const std::exception& error) {
    std::cerr << fmt::format("pipeplan: internal error: {}\n", one_line(error.what()));
    return kExitInternal;
  }
  return 0;
}

}  // namespace pipeplan::cli
