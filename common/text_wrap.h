// Text for a terminal of 120 columns: long lines broken between words,
// with their continuation indented under what they continue.
#pragma once

#include <cstddef>
#include <string>

namespace pipeplan {

inline constexpr std::size_t kTextWidth = 120;

// `text` (one line, no newline) in lines of at most `width` columns, broken
// between words (a word longer than the width stays whole), each line after
// the first starting with `indent`; ends in a newline.
std::string wrap(const std::string& text, const std::string& indent, std::size_t width = kTextWidth);
// Each line of `text` wrapped so, its continuation indented by `indent`
// columns.
std::string wrap_lines(const std::string& text, std::size_t indent, std::size_t width = kTextWidth);
// A shell command (one line) as lines of at most `width` columns that still
// paste as one: each break is " \\" and a newline, each continuation starts
// with `indent`; a flag keeps its value beside it. The first line starts
// with `first_indent`; ends in a newline.
std::string wrap_command(const std::string& command, const std::string& first_indent, const std::string& indent,
                         std::size_t width = kTextWidth);
// `text` cut at `width` columns, ending in "..." where cut.
std::string clip(const std::string& text, std::size_t width = kTextWidth);

}  // namespace pipeplan
