// Running `pipeplan simulate`, `plan`, `goodput` or `serve` inside this process, with
// arguments as on the command line, for studies that sweep their options.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pipeplan::commands {

// The command's --json output. Bad arguments throw InputError, prefixed
// "<command> options: " (a study names the point's command).
nlohmann::ordered_json run_in_process(std::string_view command, const std::vector<std::string>& args);

// The same, checked and worded as `pipeplan <command> ARGS --json` would be:
// an InputError's text is the line the CLI prints after "pipeplan: error: ".
nlohmann::ordered_json run_as_command_line(std::string_view command, const std::vector<std::string>& args);

// The long option names the command takes, without dashes ("micro-batch-size").
std::vector<std::string> option_names(std::string_view command);
// Each long option name (as option_names) with its help text.
std::vector<std::pair<std::string, std::string>> option_descriptions(std::string_view command);
// Whether the option is a flag (takes no value).
bool is_flag(std::string_view command, std::string_view option);
// Whether the option takes several values after its name (not a comma list).
bool takes_several(std::string_view command, std::string_view option);

}  // namespace pipeplan::commands
