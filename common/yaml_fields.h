// Reading YAML with errors that point at the file, line and column of the
// offending field (yaml-cpp's Mark), so users can fix the file directly.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan {

// Loads a YAML file; a missing file or a syntax error becomes a ParseError.
YAML::Node load_yaml_file(const std::string& path);

// Throws ParseError at the node's position in `file`.
[[noreturn]] void throw_at(const std::string& file, const YAML::Node& node, const std::string& message);

// A scalar's text; anything else (a map, a list) is an error naming `field`.
std::string scalar_text(const YAML::Node& node, const std::string& file, std::string_view field);

// A scalar or a flat list of scalars, as texts.
std::vector<std::string> scalar_or_list(const YAML::Node& node, const std::string& file,
                                        std::string_view field);

}  // namespace pipeplan
