// Unknown commands and options, refused before CLI11 parses (which would
// first complain of a missing required option, or list the extras in
// reverse): "unknown option --dpp for `pipeplan plan`; did you mean --dp?".
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace pipeplan::commands {

// `args` without the program name. Throws InputError for the first unknown
// subcommand or option, with the close names.
void check_arguments(const CLI::App& app, const std::vector<std::string>& args);

// A count option's check: a whole number of at least `minimum`, else
// "--threads: -5 is below 0".
CLI::Validator whole_number_at_least(long long minimum);

// CLI11's parse error in the project's wording: what was wrong and the fix.
std::string parse_error_text(const CLI::ParseError& error);

}  // namespace pipeplan::commands
