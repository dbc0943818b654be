#include "study/point_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "commands/in_process.h"
#include "common/error.h"
#include "common/text_file.h"
#include "common/yaml_fields.h"
#include "models/cluster.h"
#include "models/embedded_configs.h"
#include "models/hardware.h"
#include "models/model_config.h"

namespace pipeplan::study {
namespace {

struct FieldOverride {
  std::vector<std::string> path;  // "network.bandwidth" -> {"network", "bandwidth"}
  std::string value;
};

std::vector<std::string> split_dots(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = text.find('.', start);
    parts.emplace_back(text.substr(start, dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

// Model and hardware names may also be paths; the derived file must find
// the original from wherever it is written.
std::string original_text(const std::string& kind, const std::string& name_or_path) {
  if (std::filesystem::exists(name_or_path)) return read_text_file(name_or_path, kind + " file");
  const models::EmbeddedFile* file = models::find_embedded(kind, name_or_path);
  // A cluster stands where hardware does.
  if (file == nullptr && kind == "hardware") file = models::find_embedded("clusters", name_or_path);
  if (file == nullptr) throw InputError(fmt::format("unknown {} '{}' for the swept fields", kind, name_or_path));
  return std::string(file->text);
}

// A list's entry by its name: a cluster's network tier by `tier` ("spine"),
// a node group by `name` ("h100").
YAML::Node named_entry(const YAML::Node& list, const std::vector<std::string>& path, std::size_t at) {
  std::vector<std::string> names;
  for (const YAML::Node& entry : list) {
    for (const char* key : {"tier", "name"}) {
      if (!entry.IsMap() || !entry[key] || !entry[key].IsScalar()) continue;
      if (entry[key].Scalar() == path[at]) return entry;
      names.push_back(entry[key].Scalar());
    }
  }
  throw InputError(fmt::format("swept field {}: no entry named '{}' in {} (it has: {}); name a network tier or a "
                               "node group, e.g. network.spine.oversubscription",
                               fmt::join(path, "."), path[at], fmt::join(path.begin(), path.begin() + at, "."),
                               fmt::join(names, ", ")));
}

// Sets a nested field by rebuilding the path (yaml-cpp nodes are handles:
// assigning a child through a temporary keeps the change in the tree). A
// list along the path is entered by its entries' names.
void set_field(YAML::Node root, const std::vector<std::string>& path, const std::string& value) {
  YAML::Node node = root;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    if (node[path[i]].IsSequence() && i + 2 < path.size()) {
      node.reset(named_entry(node[path[i]], path, i + 1));
      ++i;
      continue;
    }
    node.reset(node[path[i]]);
  }
  node[path.back()] = value;
}

std::string write_derived(const std::string& kind, const std::string& original, const std::vector<FieldOverride>& fields,
                          const std::string& file) {
  YAML::Node root = parse_yaml_text(original_text(kind, original), original);
  std::string label;
  for (const FieldOverride& field : fields) {
    set_field(root, field.path, field.value);
    label += fmt::format("{}{}={}", label.empty() ? "" : ", ", fmt::join(field.path, "."), field.value);
  }
  root["name"] = fmt::format("{} ({})", root["name"] ? root["name"].as<std::string>() : original, label);
  YAML::Emitter out;
  out << root;
  // Written aside, then renamed: MPI ranks sharing the output folder write
  // the same file, and none may read another's half-written copy.
  const std::string aside = fmt::format("{}.{}.part", file, ::getpid());
  std::ofstream(aside) << out.c_str() << '\n';
  std::filesystem::rename(aside, file);
  // Loading now reports a bad field before the run starts.
  if (kind == "models") {
    models::load_model(file);
  } else {
    models::load_platform(file);
  }
  return file;
}

// A relative path that names no file from the working directory but one
// beside the study file: that one (a shipped study's plan runs from
// anywhere). Any other value as written.
std::string beside_study(const StudyFile& study, const std::string& value) {
  namespace fs = std::filesystem;
  const fs::path path(value);
  if (value.empty() || path.is_absolute() || fs::exists(path)) return value;
  const fs::path beside = fs::path(study.path).parent_path() / path;
  return fs::is_regular_file(beside) ? beside.lexically_normal().string() : value;
}

}  // namespace

std::string option_value(const StudyFile& study, const StudyPoint& point, const std::string& key) {
  const std::string swept = point.value_of(key);
  if (!swept.empty()) return swept;
  for (const auto& [name, value] : study.base) {
    if (name == key) return value;
  }
  return "";
}

std::vector<std::string> point_arguments(const StudyFile& study, const StudyPoint& point,
                                         const std::string& config_dir) {
  const std::string command(mode_command(study.mode));
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<FieldOverride> model_fields, hardware_fields;
  auto take = [&](const std::string& key, const std::string& value) {
    if (key.starts_with("model.")) {
      model_fields.push_back({split_dots(key.substr(6)), value});
    } else if (key.starts_with("hardware.")) {
      hardware_fields.push_back({split_dots(key.substr(9)), value});
    } else {
      std::erase_if(options, [&](const auto& option) { return option.first == key; });
      options.emplace_back(key, value);
    }
  };
  for (const auto& [key, value] : study.base) take(key, value);
  for (const auto& [key, value] : point.values) take(key, value);
  for (auto [kind, option, fields] : {std::tuple{"models", "model", &model_fields},
                                      std::tuple{"hardware", "hardware", &hardware_fields}}) {
    if (fields->empty()) continue;
    const std::string original = option_value(study, point, option);
    if (original.empty()) throw InputError(fmt::format("sweeping {} fields needs a '{}' option", option, option));
    // Made only when a point derives a file, so studies without one leave no empty folder.
    std::filesystem::create_directories(config_dir);
    const std::string file = fmt::format("{}/point-{}-{}.yaml", config_dir, point.index, option);
    take(option, write_derived(kind, original, *fields, file));
  }
  std::vector<std::string> args;
  bool threads_given = false;
  for (const auto& [key, value] : options) {
    threads_given |= key == "threads";
    if (commands::is_flag(command, key)) {
      if (value == "true") args.push_back(fmt::format("--{}", key));
      continue;
    }
    args.push_back(fmt::format("--{}", key));
    args.push_back(beside_study(study, value));
  }
  // Points already run in parallel: one search (or Monte Carlo) thread each.
  if (study.mode != StudyMode::kSimulate && !threads_given) args.insert(args.end(), {"--threads", "1"});
  return args;
}

}  // namespace pipeplan::study
