#include "commands/in_process.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "commands/argument_check.h"
#include "commands/goodput_command.h"
#include "commands/plan_command.h"
#include "commands/serve_command.h"
#include "commands/simulate_command.h"
#include "common/error.h"

namespace pipeplan::commands {
namespace {

// An app holding just `command`, whose output lands in `captured`.
std::unique_ptr<CLI::App> app_for(std::string_view command, CommandOutput* captured) {
  auto app = std::make_unique<CLI::App>("pipeplan");
  OutputSink keep = [captured](const CommandOutput& output, bool) {
    if (captured != nullptr) *captured = output;
  };
  if (command == "simulate") {
    register_simulate_command(*app, keep);
  } else if (command == "plan") {
    register_plan_command(*app, keep);
  } else if (command == "goodput") {
    register_goodput_command(*app, keep);
  } else if (command == "serve") {
    register_serve_command(*app, keep);
  } else {
    throw InputError(fmt::format("unknown command '{}': use simulate, plan, goodput or serve", command));
  }
  return app;
}

// `command args --json` as the CLI would take it, parsed on `app`.
void parse(CLI::App& app, std::string_view command, const std::vector<std::string>& args) {
  // CLI11 consumes the vector from its back.
  std::vector<std::string> reversed{"--json"};
  reversed.insert(reversed.end(), args.rbegin(), args.rend());
  reversed.emplace_back(command);
  app.parse(reversed);
}

}  // namespace

nlohmann::ordered_json run_in_process(std::string_view command, const std::vector<std::string>& args) {
  CommandOutput captured;
  const auto app = app_for(command, &captured);
  try {
    parse(*app, command, args);
  } catch (const CLI::ParseError& error) {
    throw InputError(fmt::format("{} options: {}", command, error.what()));
  }
  return captured.json;
}

nlohmann::ordered_json run_as_command_line(std::string_view command, const std::vector<std::string>& args) {
  CommandOutput captured;
  const auto app = app_for(command, &captured);
  std::vector<std::string> argv{std::string(command)};
  argv.insert(argv.end(), args.begin(), args.end());
  check_arguments(*app, argv);
  try {
    parse(*app, command, args);
  } catch (const CLI::ParseError& error) {
    throw InputError(parse_error_text(error));
  }
  return captured.json;
}

namespace {

std::vector<OptionInfo> build_option_table(std::string_view command) {
  const auto app = app_for(command, nullptr);
  std::vector<OptionInfo> table;
  for (const CLI::Option* option : app->get_subcommand(std::string(command))->get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name == "help" || name == "json") continue;
      const bool flag = option->get_expected_min() == 0;
      table.push_back({name, option->get_description(), flag, option->get_expected_max() > 1,
                       !flag && option->get_description().starts_with("Write ")});
    }
  }
  std::sort(table.begin(), table.end(), [](const OptionInfo& a, const OptionInfo& b) { return a.name < b.name; });
  return table;
}

// Each command's table, built once: building its CLI for every lookup made
// a study of a million points spend minutes before its first.
const std::vector<OptionInfo>& cached_option_table(std::string_view command) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<OptionInfo>, std::less<>> tables;
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = tables.find(command);
  if (found == tables.end()) found = tables.emplace(std::string(command), build_option_table(command)).first;
  return found->second;
}

const OptionInfo* find_option(std::string_view command, std::string_view option) {
  const std::vector<OptionInfo>& table = cached_option_table(command);
  const auto found = std::lower_bound(table.begin(), table.end(), option,
                                      [](const OptionInfo& info, std::string_view name) { return info.name < name; });
  return found != table.end() && found->name == option ? &*found : nullptr;
}

}  // namespace

std::vector<OptionInfo> option_table(std::string_view command) { return cached_option_table(command); }

std::vector<std::string> option_names(std::string_view command) {
  std::vector<std::string> names;
  for (OptionInfo& option : option_table(command)) names.push_back(std::move(option.name));
  return names;
}

bool is_flag(std::string_view command, std::string_view option) {
  const OptionInfo* found = find_option(command, option);
  return found != nullptr && found->flag;
}

bool writes_file(std::string_view command, std::string_view option) {
  const OptionInfo* found = find_option(command, option);
  return found != nullptr && found->writes_file;
}

}  // namespace pipeplan::commands
