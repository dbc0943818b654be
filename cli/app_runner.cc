#include "cli/app_runner.h"

#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "commands/argument_check.h"
#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::cli {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

}  // namespace

int run_app(CLI::App& app, int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    commands::check_arguments(app, args);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
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
