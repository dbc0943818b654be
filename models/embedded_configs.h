// The YAML files of configs/models, configs/hardware and configs/clusters, built into the
// binary so that zoo names work on any machine without the source tree.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::models {

struct EmbeddedFile {
  std::string_view kind;  // "models", "hardware" or "clusters"
  std::string_view name;  // file name without extension
  std::string_view text;
};

std::span<const EmbeddedFile> embedded_files();
const EmbeddedFile* find_embedded(std::string_view kind, std::string_view name);
std::vector<std::string> embedded_names(std::string_view kind);

}  // namespace pipeplan::models
