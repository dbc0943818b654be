#include "study/metric_path.h"

#include <fmt/format.h>

#include <string>

#include "common/error.h"

namespace pipeplan::study {
namespace {

std::string keys_of(const nlohmann::ordered_json& node) {
  std::string keys;
  if (!node.is_object()) return node.is_array() ? "a list (use '*')" : "a value";
  for (const auto& [key, value] : node.items()) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", key);
  return keys;
}

nlohmann::ordered_json walk(const nlohmann::ordered_json& node, std::string_view rest, std::string_view full) {
  if (rest.empty()) return node;
  const auto dot = rest.find('.');
  const std::string key(rest.substr(0, dot));
  const std::string_view tail = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  if (key == "*") {
    if (!node.is_array()) throw InputError(fmt::format("metric '{}': '*' needs a list here", full));
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& item : node) list.push_back(walk(item, tail, full));
    return list;
  }
  if (!node.is_object() || !node.contains(key)) {
    throw InputError(fmt::format("metric '{}': no '{}' in the output; there: {}", full, key, keys_of(node)));
  }
  return walk(node.at(key), tail, full);
}

}  // namespace

nlohmann::ordered_json extract_metric(const nlohmann::ordered_json& output, std::string_view path) {
  return walk(output, path, path);
}

}  // namespace pipeplan::study
