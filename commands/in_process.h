// Running `pipeplan simulate`, `plan`, `goodput` or `serve` inside this process, with
// arguments as on the command line, for studies that sweep their options.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::commands {

// The command's --json output. Bad arguments throw InputError, prefixed
// "<command> options: " (a study names the point's command).
nlohmann::ordered_json run_in_process(std::string_view command, const std::vector<std::string>& args);

// The same, checked and worded as `pipeplan <command> ARGS --json` would be:
// an InputError's text is the line the CLI prints after "pipeplan: error: ".
nlohmann::ordered_json run_as_command_line(std::string_view command, const std::vector<std::string>& args);

// One long option of a command, by its name without dashes
// ("micro-batch-size"); an option with two long names is listed twice.
struct OptionInfo {
  std::string name;
  std::string description;
  bool flag = false;     // takes no value
  bool several = false;  // takes several values after its name (not a comma list)
  bool writes_file = false;  // an output: a file's path, its description "Write ..."
};
// The command's long options but help and json, sorted by name.
std::vector<OptionInfo> option_table(std::string_view command);

// The long option names the command takes, without dashes.
std::vector<std::string> option_names(std::string_view command);
// Whether the option is a flag (takes no value).
bool is_flag(std::string_view command, std::string_view option);
// Whether the option names a file the command writes (OptionInfo::writes_file).
bool writes_file(std::string_view command, std::string_view option);

}  // namespace pipeplan::commands
