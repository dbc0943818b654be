#include <algorithm>

#include "models/embedded_configs.h"

namespace pipeplan::models {

const EmbeddedFile* find_embedded(std::string_view kind, std::string_view name) {
  for (const EmbeddedFile& file : embedded_files()) {
    if (file.kind == kind && file.name == name) return &file;
  }
  return nullptr;
}

std::vector<std::string> embedded_names(std::string_view kind) {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : embedded_files()) {
    if (file.kind == kind) names.emplace_back(file.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace pipeplan::models
