#include "common/yaml_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "common/quote.h"
#include "common/text_file.h"
#include "common/yaml_document_check.h"

namespace pipeplan {

namespace {

// yaml-cpp keeps both of a map's repeated keys and reads the first, so a
// file that gives a field twice would be read as the first silently.
void check_unique_keys(const YAML::Node& node, const std::string& file) {
  if (node.IsMap()) {
    std::map<std::string, int> lines;
    for (const auto& entry : node) {
      if (entry.first.IsScalar()) {
        const auto [first, inserted] = lines.emplace(entry.first.Scalar(), entry.first.Mark().line + 1);
        if (!inserted) {
          throw_at(file, entry.first,
                   fmt::format("'{}' is given twice in one map (line {} and here): keep one", entry.first.Scalar(),
                               first->second));
        }
      }
      check_unique_keys(entry.second, file);
    }
  } else if (node.IsSequence()) {
    for (const YAML::Node& item : node) check_unique_keys(item, file);
  }
}

}  // namespace

YAML::Node parse_yaml_text(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    check_yaml_document(text, file);  // before any walk over the tree
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw_yaml_error(file, error);
  }
  check_unique_keys(root, file);
  return root;
}

YAML::Node load_yaml_file(const std::string& path, std::string_view what) {
  return parse_yaml_text(read_text_file(path, what), path);
}

void throw_yaml_error(const std::string& file, const YAML::Exception& error) {
  std::string what = error.msg;
  if (dynamic_cast<const YAML::BadSubscript*>(&error) != nullptr) {
    what = fmt::format("a field is indexed as a map but is a single value or a list ({})", error.msg);
  } else if (dynamic_cast<const YAML::BadConversion*>(&error) != nullptr) {
    what = "a field has the wrong kind of value (a map or list where a value belongs, or text where a number does)";
  } else if (dynamic_cast<const YAML::InvalidNode*>(&error) != nullptr) {
    what = fmt::format("a field is missing or misplaced ({})", error.msg);
  }
  const bool placed = !error.mark.is_null();
  throw ParseError(file, placed ? error.mark.line + 1 : 1, placed ? error.mark.column + 1 : 1, one_line(what));
}

void throw_at(const std::string& file, const YAML::Node& node, const std::string& message) {
  // A null node (an empty file, a missing document) has no position: the
  // file's start.
  const YAML::Mark mark = node.Mark();
  throw ParseError(file, std::max(mark.line, 0) + 1, std::max(mark.column, 0) + 1, message);
}

std::string scalar_text(const YAML::Node& node, const std::string& file, std::string_view field) {
  if (!node.IsScalar()) throw_at(file, node, fmt::format("'{}' must be a single value", field));
  return node.Scalar();
}

std::vector<std::string> scalar_or_list(const YAML::Node& node, const std::string& file,
                                        std::string_view field) {
  std::vector<std::string> values;
  if (node.IsScalar()) {
    values.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (const YAML::Node& item : node) values.push_back(scalar_text(item, file, field));
  } else {
    throw_at(file, node, fmt::format("'{}' must be a value or a list of values", field));
  }
  return values;
}

void check_keys(const YAML::Node& map, const std::string& file, std::string_view section,
                std::span<const std::string_view> known) {
  if (!map.IsMap()) throw_at(file, map, fmt::format("'{}' must be a map of keys to values", section));
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw_at(file, entry.first,
               fmt::format("unknown key '{}' in {}; known keys: {}", key, section, fmt::join(known, ", ")));
    }
  }
}

}  // namespace pipeplan
