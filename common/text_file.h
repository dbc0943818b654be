// Reading a file a user names: one line, exit 2, for a path that is
// missing, a directory, not a regular file, unreadable or too large, before
// any parser sees it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pipeplan {

// Files pipeplan reads (schedules, models, plans, profiles, studies) are
// text of at most this size.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{256} << 20;

// The whole file, less a leading UTF-8 byte-order mark. `what` names it in
// errors ("--schedule-csv", "the study file").
std::string read_text_file(const std::string& path, std::string_view what);

}  // namespace pipeplan
