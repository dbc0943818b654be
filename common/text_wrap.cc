#include "common/text_wrap.h"

#include <sstream>
#include <vector>

namespace pipeplan {
namespace {

// `pieces` laid out after `first` in lines of at most `width` columns (a
// piece longer stays whole), each break `mark` and a newline, each
// continuation starting with `indent`; ends in a newline.
std::string lay_out(const std::vector<std::string>& pieces, std::string first, const std::string& indent,
                    std::size_t width, const std::string& mark) {
  std::string wrapped, line = std::move(first);
  bool line_has_words = false;
  for (const std::string& piece : pieces) {
    if (line_has_words && line.size() + 1 + piece.size() + mark.size() > width) {
      wrapped += line + mark + "\n";
      line = indent;
      line_has_words = false;
    }
    if (line_has_words) line += ' ';
    line += piece;
    line_has_words = true;
  }
  return wrapped + line + "\n";
}

}  // namespace

std::string wrap(const std::string& text, const std::string& indent, std::size_t width) {
  // The line's own indent is kept; words are what follows it.
  const std::size_t first_word = text.find_first_not_of(' ');
  std::istringstream words(first_word == std::string::npos ? "" : text.substr(first_word));
  std::vector<std::string> pieces;
  for (std::string word; words >> word;) pieces.push_back(word);
  return lay_out(pieces, text.substr(0, first_word == std::string::npos ? text.size() : first_word), indent, width, "");
}

std::string wrap_lines(const std::string& text, std::size_t indent, std::size_t width) {
  std::istringstream lines(text);
  std::string wrapped;
  for (std::string line; std::getline(lines, line);) {
    wrapped += line.size() <= width ? line + "\n" : wrap(line, std::string(indent, ' '), width);
  }
  return wrapped;
}

std::string wrap_command(const std::string& command, const std::string& first_indent, const std::string& indent,
                         std::size_t width) {
  // Pieces: a word, or a flag ("-x", "--name") with the value after it.
  std::istringstream words(command);
  std::vector<std::string> pieces;
  for (std::string word; words >> word;) {
    const bool value = !pieces.empty() && pieces.back().starts_with('-') && pieces.back().find(' ') == std::string::npos &&
                       !word.starts_with('-');
    if (value) {
      pieces.back() += ' ' + word;
    } else {
      pieces.push_back(word);
    }
  }
  return lay_out(pieces, first_indent, indent, width, " \\");
}

std::string clip(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 3) + "...";
}

}  // namespace pipeplan
