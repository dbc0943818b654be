// What a command produced: the JSON its --json prints and the human text.
// The binary prints one of them; a study keeps the JSON.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace pipeplan::commands {

struct CommandOutput {
  nlohmann::ordered_json json;
  std::string text;
};

// Receives a command's output and whether --json was asked for.
using OutputSink = std::function<void(const CommandOutput& output, bool json)>;

// Prints to standard output: the JSON (indented) or the text.
void print_output(const CommandOutput& output, bool json);

}  // namespace pipeplan::commands
