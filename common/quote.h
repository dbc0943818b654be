// User text echoed in a message, made safe for one line: single-quoted,
// with quotes, backslashes and control bytes escaped (\n, \t, \xNN), and
// cut after a length no message needs.
#pragma once

#include <string>
#include <string_view>

namespace pipeplan {

std::string quoted_input(std::string_view text);

// A message kept on one line: control bytes escaped as quoted_input() does, the
// rest as it is. Every error the CLI prints goes through it.
std::string one_line(std::string_view text);

}  // namespace pipeplan
