// A small well-formedness check for the SVG and HTML pipeplan writes: every
// element closes in order, one root, attributes quoted. Enough to catch a
// broken writer; not a validating parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::testing {

// Empty when well formed, else what is wrong.
inline std::string xml_problem(std::string_view text) {
  std::vector<std::string> open;
  int roots = 0;
  for (std::size_t at = text.find('<'); at != std::string_view::npos; at = text.find('<', at + 1)) {
    if (text.substr(at, 4) == "<!--") {
      at = text.find("-->", at);
      if (at == std::string_view::npos) return "unclosed comment";
      continue;
    }
    if (text.substr(at, 2) == "<?" || text.substr(at, 2) == "<!") continue;
    const std::size_t end = text.find('>', at);
    if (end == std::string_view::npos) return "unclosed tag";
    std::string_view tag = text.substr(at + 1, end - at - 1);
    std::size_t quotes = 0;
    for (char c : tag) quotes += c == '"' ? 1 : 0;
    if (quotes % 2 != 0) return "unbalanced quotes in <" + std::string(tag) + ">";
    const bool closing = tag.starts_with('/');
    const bool self_closing = tag.ends_with('/');
    const std::string name(tag.substr(closing ? 1 : 0, tag.find_first_of(" \t\n/", closing ? 1 : 0) - (closing ? 1 : 0)));
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
    } else if (!self_closing) {
      if (open.empty()) ++roots;
      open.push_back(name);
    } else if (open.empty()) {
      ++roots;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> never closes";
  if (roots != 1) return "expected one root element";
  return "";
}

}  // namespace pipeplan::testing
