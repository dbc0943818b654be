#include "commands/option_use.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace pipeplan::commands {
const CLI::Option* find_long_option(const CLI::App& command, std::string_view long_name) {
  for (const CLI::Option* option : command.get_options()) {
    const auto& names = option->get_lnames();
    if (std::find(names.begin(), names.end(), long_name) != names.end()) return option;
  }
  return nullptr;
}

bool given(const CLI::App& command, std::string_view long_name) {
  const CLI::Option* option = find_long_option(command, long_name);
  return option != nullptr && option->count() > 0;
}

void refuse_unread_options(const CLI::App& command, const std::vector<std::string_view>& reads,
                           std::string_view mode) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_lnames().empty()) continue;
    const auto& names = option->get_lnames();
    const bool read = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
      return name == "help" || std::find(reads.begin(), reads.end(), name) != reads.end();
    });
    if (!read) throw InputError(fmt::format("--{} has no effect {}; drop it", names.front(), mode));
  }
}

std::vector<std::string_view> joined(std::initializer_list<std::vector<std::string_view>> lists) {
  std::vector<std::string_view> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

}  // namespace pipeplan::commands
