// Writing the files a command was asked for.
#pragma once

#include <string>
#include <string_view>

namespace pipeplan::commands {

// Throws InputError naming the option when the file cannot be written.
void write_text_file(const std::string& path, std::string_view contents, std::string_view option);

}  // namespace pipeplan::commands
