#include "study/metric_path.h"

#include <fmt/format.h>

#include <string>

#include "common/close_names.h"
#include "common/error.h"

namespace pipeplan::study {
namespace {

std::string keys_of(const nlohmann::ordered_json& node) {
  std::string keys;
  if (!node.is_object()) return node.is_array() ? "a list (use '*' or an index)" : "a value";
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
  if (node.is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos) {
    const std::size_t index = key.size() > 9 ? node.size() : std::stoul(key);
    if (index >= node.size()) {
      throw InputError(fmt::format("metric '{}': index {} is past the list's {} entries", full, key, node.size()));
    }
    return walk(node.at(index), tail, full);
  }
  if (!node.is_object() || !node.contains(key)) {
    throw InputError(fmt::format("metric '{}': no '{}' in the output; there: {}", full, key, keys_of(node)));
  }
  return walk(node.at(key), tail, full);
}


void collect_paths(const nlohmann::ordered_json& node, const std::string& prefix, int depth,
                   std::vector<std::string>& paths) {
  constexpr int kMaxDepth = 5;
  if (depth > kMaxDepth) return;
  if (node.is_array()) {
    if (!node.empty()) collect_paths(node.front(), prefix + ".*", depth + 1, paths);
    paths.push_back(prefix);
    return;
  }
  if (!node.is_object()) {
    paths.push_back(prefix);
    return;
  }
  for (const auto& [key, value] : node.items()) collect_paths(value, prefix.empty() ? key : prefix + "." + key, depth + 1, paths);
}

}  // namespace

nlohmann::ordered_json extract_metric(const nlohmann::ordered_json& output, std::string_view path) {
  return walk(output, path, path);
}

std::vector<std::string> metric_paths(const nlohmann::ordered_json& output) {
  std::vector<std::string> paths;
  collect_paths(output, "", 0, paths);
  return paths;
}

void check_metric_path(const nlohmann::ordered_json& output, std::string_view path, std::string_view command) {
  try {
    walk(output, path, path);
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}{}; checked against the first point's `pipeplan {} --json` output",
                                 error.what(), did_you_mean(path, metric_paths(output)), command));
  }
}

}  // namespace pipeplan::study
