#include "common/quote.h"

#include <fmt/format.h>

namespace pipeplan {

namespace {

void append_escaped(std::string& out, unsigned char c) {
  switch (c) {
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
  }
}

}  // namespace

std::string quoted_input(std::string_view text) {
  constexpr std::size_t kLongest = 200;  // characters shown; the rest is summarised
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kLongest; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\'' || c == '\\') out += '\\';
    append_escaped(out, c);
  }
  out += '\'';
  if (text.size() > kLongest) out += fmt::format(" (and {} more characters)", text.size() - kLongest);
  return out;
}

std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) append_escaped(out, static_cast<unsigned char>(c));
  return out;
}

}  // namespace pipeplan
