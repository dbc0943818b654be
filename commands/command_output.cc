#include "commands/command_output.h"

#include <iostream>

namespace pipeplan::commands {

void print_output(const CommandOutput& output, bool json) {
  if (json) {
    std::cout << output.json.dump(2) << '\n';
  } else {
    std::cout << output.text;
  }
}

}  // namespace pipeplan::commands
