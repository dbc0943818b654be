#include "common/text_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/quote.h"
#include "common/units.h"

namespace pipeplan {

std::string read_text_file(const std::string& path, std::string_view what) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  const std::string name = quoted_input(path);
  if (error || !fs::exists(status)) throw InputError(fmt::format("{}: {} does not exist; check the path", what, name));
  if (fs::is_directory(status)) throw InputError(fmt::format("{}: {} is a directory; give a file", what, name));
  if (!fs::is_regular_file(status)) {
    throw InputError(fmt::format("{}: {} is not a regular file; give a file", what, name));
  }
  const std::uintmax_t size = fs::file_size(path, error);
  if (!error && size > kMaxInputFileBytes) {
    throw InputError(fmt::format("{}: {} holds {}, over the limit of {} for an input file", what, name,
                                 format_bytes(static_cast<std::int64_t>(size)),
                                 format_bytes(static_cast<std::int64_t>(kMaxInputFileBytes))));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read {}; check its permissions", what, name));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: reading {} failed", what, name));
  std::string contents = text.str();
  // Editors on Windows save UTF-8 with a byte-order mark: legal, and no
  // part of the first line.
  if (contents.starts_with("\xEF\xBB\xBF")) contents.erase(0, 3);
  return contents;
}

}  // namespace pipeplan
