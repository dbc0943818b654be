// Reading YAML with errors that point at the file, line and column of the
// offending field (yaml-cpp's Mark), so users can fix the file directly.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace pipeplan {

// Loads a YAML file; a missing, unreadable or non-regular file is an
// InputError naming it as `what` ("--plan", "the study file"), a syntax
// error a ParseError.
YAML::Node load_yaml_file(const std::string& path, std::string_view what);

// Parses YAML text read from `file`: a syntax error, a key given twice in
// one map (which yaml-cpp would read as its first), or what
// check_yaml_document refuses (a second document, a recursive alias,
// aliases expanding past a bound) is a ParseError.
YAML::Node parse_yaml_text(const std::string& text, const std::string& file);

// Turns yaml-cpp's own errors (a value indexed as a map, a conversion that
// fails, an invalid node) into a ParseError naming the file and, where
// yaml-cpp knows it, the line.
[[noreturn]] void throw_yaml_error(const std::string& file, const YAML::Exception& error);

// Runs `read` (a walk over a YAML tree from `file`) with yaml-cpp's errors
// turned into ParseErrors.
template <class Read>
auto read_yaml(const std::string& file, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const YAML::Exception& error) {
    throw_yaml_error(file, error);
  }
}

// Throws ParseError at the node's position in `file`.
[[noreturn]] void throw_at(const std::string& file, const YAML::Node& node, const std::string& message);

// A scalar's text; anything else (a map, a list) is an error naming `field`.
std::string scalar_text(const YAML::Node& node, const std::string& file, std::string_view field);

// A scalar or a flat list of scalars, as texts.
std::vector<std::string> scalar_or_list(const YAML::Node& node, const std::string& file,
                                        std::string_view field);

// Rejects keys of `map` outside `known`, listing them all so a typo is easy
// to fix; `section` names the map ("gpu.efficiency").
void check_keys(const YAML::Node& map, const std::string& file, std::string_view section,
                std::span<const std::string_view> known);
inline void check_keys(const YAML::Node& map, const std::string& file, std::string_view section,
                       std::initializer_list<std::string_view> known) {
  check_keys(map, file, section, std::span<const std::string_view>(known.begin(), known.size()));
}

// Runs a unit parser on a scalar; its InputError (which names the field but
// not the place) becomes a ParseError at the value's line and column.
template <typename Parse>
auto parse_at(const YAML::Node& node, const std::string& file, const std::string& field, Parse parse) {
  const std::string text = scalar_text(node, file, field);
  try {
    return parse(text, field);
  } catch (const ParseError&) {
    throw;
  } catch (const InputError& error) {
    throw_at(file, node, error.what());
  }
}

}  // namespace pipeplan
