#include "commands/output_files.h"

#include <fmt/format.h>

#include <fstream>

#include "common/error.h"

namespace pipeplan::commands {

void write_text_file(const std::string& path, std::string_view contents, std::string_view option) {
  std::ofstream out(path, std::ios::binary);
  if (out) out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) throw InputError(fmt::format("{}: cannot write '{}'; check the directory exists and is writable", option, path));
}

}  // namespace pipeplan::commands
