// Checks on a YAML text's document structure that yaml-cpp's Load does not
// make, run before any walk over the loaded tree.
#pragma once

#include <string>

namespace pipeplan {

// Throws ParseError at the offending place in `file` for
// - a second document with content (after '---'), which Load drops;
// - an alias inside the node it names (`&a [*a]`), which Load turns into a
//   tree that contains itself, so that every walk over it never ends;
// - aliases that expand to more than kMaxYamlNodes nodes (each level of
//   `&b [*a, *a]` doubles them), which no configuration needs.
void check_yaml_document(const std::string& text, const std::string& file);

inline constexpr long long kMaxYamlNodes = 100'000;

}  // namespace pipeplan
