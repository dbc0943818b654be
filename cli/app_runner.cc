#include "cli/app_runner.h"

#include <fmt/format.h>

#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "commands/argument_check.h"
#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::cli {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

// CLI11's own wording, in the project's: what was wrong and the fix.
std::string parse_error_text(const CLI::ParseError& error) {
  const std::string what = one_line(error.what());
  std::smatch match;
  static const std::regex repeated(R"(^(-[^:]+): At Most 1 required but received (\d+)$)");
  static const std::regex missing(R"(^(-[^:]+): 1 required (\w+) missing$)");
  static const std::regex unconverted(R"(^Could not convert: (-[^ ]+) = (.*)$)");
  if (std::regex_match(what, match, repeated)) {
    return fmt::format("{} is given {} times: give it once", match[1].str(), match[2].str());
  }
  if (std::regex_match(what, match, missing)) {
    const std::string kind = match[2].str() == "INT" ? "a whole number" : "a value";
    return fmt::format("{} needs {} after it", match[1].str(), kind);
  }
  // A number CLI11 could not convert was given to a whole-number option.
  if (std::regex_match(what, match, unconverted)) {
    static const std::regex number(R"(^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$)");
    const std::string value = match[2].str();
    const char* wanted = std::regex_match(value, number) ? "give a whole number" : "give a number";
    return fmt::format("{} {}: {}, e.g. {} 2", match[1].str(), value, wanted, match[1].str());
  }
  if (what == "A subcommand is required") return "give a command, e.g. pipeplan simulate (pipeplan --help lists them)";
  return what;
}

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
    std::cerr << fmt::format("pipeplan: error: {}\n", parse_error_text(error));
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
