#include "models/recompute.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "common/error.h"
#include "common/quote.h"
#include "models/model_config.h"

namespace pipeplan::models {
namespace {

constexpr std::array<std::pair<std::string_view, unsigned>, 7> kModules{{{"core_attn", kCoreAttention},
                                                                         {"moe_act", kMoeActivation},
                                                                         {"layernorm", kLayerNorm},
                                                                         {"mlp", kMlp},
                                                                         {"moe", kMoe},
                                                                         {"shared_experts", kSharedExperts},
                                                                         {"mla_up_proj", kMlaUpProj}}};
constexpr std::string_view kModuleNames =
    "core_attn, moe_act, layernorm, mlp, moe, shared_experts or mla_up_proj";

}  // namespace

Recompute parse_recompute(std::string_view text, std::string_view field) {
  // Any case, as schedule names are read.
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "none") return Recompute::kNone;
  if (lower == "selective") return Recompute::kSelective;
  if (lower == "full") return Recompute::kFull;
  throw InputError(fmt::format("{} must be none, selective or full, got {}", field, quoted_input(text)));
}

std::string_view recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "none";
}

unsigned default_recompute_modules(const ModelConfig& model) {
  return model.moe.enabled() ? kCoreAttention | kMoeActivation | kLayerNorm : kDefaultRecomputeModules;
}

unsigned parse_recompute_modules(std::string_view text, std::string_view field) {
  if (text.find(",,") != std::string_view::npos || text.starts_with(',') || text.ends_with(',')) {
    throw InputError(
        fmt::format("{} {}: an empty module name; separate the names by single commas", field, quoted_input(text)));
  }
  unsigned modules = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find_first_of(", ", start), text.size());
    const std::string_view name = text.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    unsigned bit = 0;
    for (const auto& [known, value] : kModules) {
      if (name == known) bit = value;
    }
    if (bit == 0) {
      throw InputError(
          fmt::format("{} {}: not a recompute module; use {}", field, quoted_input(name), kModuleNames));
    }
    if ((modules & bit) != 0) throw InputError(fmt::format("{}: {} is named twice", field, name));
    modules |= bit;
  }
  if (modules == 0) {
    throw InputError(fmt::format("{} is empty: name {} (e.g. moe_act,layernorm)", field, kModuleNames));
  }
  return modules;
}

std::string recompute_modules_refusal(const ModelConfig& model, unsigned modules) {
  const MoeConfig& moe = model.moe;
  // What each module needs: experts, shared experts, a dense layer.
  const bool dense_layer = !moe.enabled() || moe.dense_layers > 0;
  const std::pair<unsigned, bool> has[] = {{kCoreAttention, true},
                                           {kLayerNorm, true},
                                           {kMoeActivation, moe.enabled()},
                                           {kMoe, moe.enabled()},
                                           {kSharedExperts, moe.enabled() && moe.shared_experts > 0},
                                           {kMlp, dense_layer},
                                           {kMlaUpProj, model.mla.enabled()}};
  unsigned lacking = 0, present = 0;
  for (const auto& [bit, there] : has) (there ? present : lacking) |= bit;
  if ((modules & lacking) == 0) return "";
  const unsigned missing = modules & lacking;
  const std::string what = (missing & kMlaUpProj) != 0 ? "has no latent attention"
                           : !moe.enabled()             ? "has no experts"
                           : (missing & kMlp) != 0      ? "has experts on every layer (no dense MLP)"
                                                        : "has no shared experts";
  return fmt::format("--recompute-modules {}: model '{}' {}; its modules are {}",
                     recompute_modules_name(missing), model.name, what,
                     recompute_modules_name(present, ", "));
}

std::string recompute_modules_name(unsigned modules, std::string_view separator) {
  std::string names;
  for (const auto& [name, bit] : kModules) {
    if ((modules & bit) == 0) continue;
    if (!names.empty()) names += separator;
    names += name;
  }
  return names;
}

std::string recompute_label(Recompute recompute, unsigned modules) {
  if (recompute != Recompute::kSelective || modules == kDefaultRecomputeModules) {
    return std::string(recompute_name(recompute));
  }
  return "selective:" + recompute_modules_name(modules);
}

std::vector<Recompute> parse_stage_recompute(std::string_view text, std::string_view field) {
  if (text.find(",,") != std::string_view::npos || text.starts_with(',') || text.ends_with(',')) {
    throw InputError(fmt::format("{} {}: an empty stage; give one setting per stage, separated by single commas",
                                 field, quoted_input(text)));
  }
  std::vector<Recompute> stages;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find_first_of(", ", start), text.size());
    const std::string_view name = text.substr(start, end - start);
    start = end + 1;
    if (!name.empty()) stages.push_back(parse_recompute(name, field));
  }
  if (stages.empty()) {
    throw InputError(fmt::format("{} is empty: name one of none, selective or full per stage (e.g. full,full,none)",
                                 field));
  }
  return stages;
}

std::string stage_recompute_name(const std::vector<Recompute>& stages) {
  return fmt::format("{}", fmt::join(stage_recompute_names(stages), ","));
}

std::vector<std::string> stage_recompute_names(const std::vector<Recompute>& stages) {
  std::vector<std::string> names;
  for (Recompute stage : stages) names.emplace_back(recompute_name(stage));
  return names;
}

bool recomputes_selective(Recompute uniform, const std::vector<Recompute>& stages) {
  return uniform == Recompute::kSelective ||
         std::find(stages.begin(), stages.end(), Recompute::kSelective) != stages.end();
}

std::string stage_recompute_label(const std::vector<Recompute>& stages, unsigned modules) {
  std::string label = "per-stage:";
  for (std::size_t first = 0; first < stages.size();) {
    std::size_t end = first;
    while (end < stages.size() && stages[end] == stages[first]) ++end;
    if (first > 0) label += ",";
    label += recompute_label(stages[first], modules);
    if (end - first > 1) label += fmt::format(" x{}", end - first);
    first = end;
  }
  return label;
}

}  // namespace pipeplan::models
