// Running `pipeplan simulate`, `plan`, `goodput` or `serve` inside this process, with
// arguments as on the command line, for studies that sweep their options.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::commands {

// The command's --json output. Bad arguments throw InputError.
nlohmann::ordered_json run_in_process(std::string_view command, const std::vector<std::string>& args);

// The long option names the command takes, without dashes ("micro-batch-size").
std::vector<std::string> option_names(std::string_view command);
// Whether the option is a flag (takes no value).
bool is_flag(std::string_view command, std::string_view option);

}  // namespace pipeplan::commands
