// No option is accepted and ignored: each mode of a command names the
// options it reads, and any other option the user gave is refused with a
// line saying which option and why, before anything runs.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::commands {

// The option with this long name (without dashes), or nullptr.
const CLI::Option* find_long_option(const CLI::App& command, std::string_view long_name);

// Whether the user gave the option (by its long name, without dashes).
bool given(const CLI::App& command, std::string_view long_name);

// Throws InputError for the first option given on `command` whose long name
// is not in `reads`: "--tp has no effect <mode>; drop it".
void refuse_unread_options(const CLI::App& command, const std::vector<std::string_view>& reads,
                           std::string_view mode);

// `reads` and more: a mode built from shared lists.
std::vector<std::string_view> joined(std::initializer_list<std::vector<std::string_view>> lists);

}  // namespace pipeplan::commands
