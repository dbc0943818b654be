#include "commands/argument_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <regex>

#include "common/close_names.h"
#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::commands {
namespace {

std::string command_path(const CLI::App& command) {
  std::string path;
  for (const CLI::App* at = &command; at != nullptr; at = at->get_parent()) {
    path = at->get_parent() == nullptr ? "pipeplan" + path : " " + at->get_name() + path;
  }
  return path;
}

std::vector<std::string> long_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// A positional taking a list (`calibrate RUNS...`) takes every word left.
std::size_t positional_slots(const CLI::App& command) {
  std::size_t slots = 0;
  for (const CLI::Option* option : command.get_options()) {
    if (!option->get_positional()) continue;
    slots += static_cast<std::size_t>(std::max(1, option->get_items_expected_max()));
  }
  return slots;
}

const CLI::Option* find_option(const CLI::App& command, const std::string& token) {
  for (const CLI::Option* option : command.get_options()) {
    if (token.starts_with("--")) {
      const auto& names = option->get_lnames();
      if (std::find(names.begin(), names.end(), token.substr(2)) != names.end()) return option;
    } else {
      const auto& names = option->get_snames();
      if (std::find(names.begin(), names.end(), token.substr(1)) != names.end()) return option;
    }
  }
  return nullptr;
}

// "--dp", "-p", not "-1" or "-" (values).
bool is_option_token(const std::string& token) {
  if (token.starts_with("--")) return token.size() > 2;
  return token.size() >= 2 && token[0] == '-' && std::isalpha(static_cast<unsigned char>(token[1]));
}

}  // namespace

void check_arguments(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* command = &app;
  bool value_expected = false;
  std::size_t positionals = 0;
  for (const std::string& token : args) {
    if (token == "--") return;  // what follows is positional
    if (value_expected && !is_option_token(token)) {
      value_expected = false;
      continue;
    }
    value_expected = false;
    if (is_option_token(token)) {
      const std::string name = token.starts_with("--") ? token.substr(0, token.find('=')) : token.substr(0, 2);
      const CLI::Option* option = find_option(*command, name);
      if (option == nullptr) {
        throw InputError(fmt::format("unknown option {} for `{}`{}; `{} --help` lists them", name,
                                     command_path(*command), did_you_mean(name, long_names(*command)),
                                     command_path(*command)));
      }
      const bool inline_value = token.find('=') != std::string::npos || (!token.starts_with("--") && token.size() > 2);
      value_expected = option->get_expected_min() > 0 && !inline_value;
      continue;
    }
    const auto subcommands = command->get_subcommands([](const CLI::App*) { return true; });
    const auto found = std::find_if(subcommands.begin(), subcommands.end(),
                                    [&](const CLI::App* sub) { return sub->check_name(token); });
    if (found != subcommands.end()) {
      command = *found;
      positionals = 0;
      continue;
    }
    if (!subcommands.empty() && command->get_require_subcommand_min() > 0) {
      std::vector<std::string> names;
      for (const CLI::App* sub : subcommands) names.push_back(sub->get_name());
      throw InputError(fmt::format("unknown command '{}' for `{}`{}; commands: {}", token, command_path(*command),
                                   did_you_mean(token, names), fmt::join(names, ", ")));
    }
    if (++positionals > positional_slots(*command)) {
      throw InputError(fmt::format("unexpected argument '{}' for `{}`: options are written --name value; `{} --help` "
                                   "lists them",
                                   token, command_path(*command), command_path(*command)));
    }
  }
}

CLI::Validator whole_number_at_least(long long minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        long long value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || stop != end) return fmt::format("{} is not a whole number", text);
        if (value < minimum) return fmt::format("{} is below {}", text, minimum);
        return "";
      },
      fmt::format("INT>={}", minimum));
}

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

}  // namespace pipeplan::commands
