#include "common/yaml_fields.h"

#include <fmt/format.h>

#include <fstream>

#include "common/error.h"

namespace pipeplan {

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open the file; check the path", path));
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& error) {
    throw ParseError(path, error.mark.line + 1, error.mark.column + 1, error.msg);
  }
}

void throw_at(const std::string& file, const YAML::Node& node, const std::string& message) {
  const YAML::Mark mark = node.Mark();
  throw ParseError(file, mark.line + 1, mark.column + 1, message);
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

}  // namespace pipeplan
