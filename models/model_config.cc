#include "models/model_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>

#include "common/close_names.h"
#include "common/error.h"
#include "common/text_file.h"
#include "common/yaml_fields.h"
#include "models/embedded_configs.h"
#include "models/hf_config.h"
#include "models/model_limits.h"

namespace pipeplan::models {
namespace {

constexpr std::array<std::string_view, 20> kTopKeys{
    "name", "aliases", "source", "layers", "hidden", "ffn", "heads", "kv_heads", "head_dim", "vocab", "context", "norm",
    "mlp", "position_embedding", "tied_embeddings", "biases", "dropout", "mtp_layers", "moe", "mla"};
constexpr std::array<std::string_view, 7> kMoeKeys{
    "experts", "top_k", "expert_ffn", "shared_experts", "dense_layers", "router_groups", "router_group_top_k"};
constexpr std::array<std::string_view, 5> kMlaKeys{"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                                   "qk_rope_head_dim", "v_head_dim"};

// A map read field by field, so that errors point at the offending line.
class Fields {
 public:
  Fields(const YAML::Node& map, const std::string& file, std::string prefix)
      : map_(map), file_(file), prefix_(std::move(prefix)) {}

  template <std::size_t N>
  void reject_unknown(const std::array<std::string_view, N>& known) const {
    for (const auto& entry : map_) {
      const std::string key = entry.first.Scalar();
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string list;
      for (std::string_view name : known) list += (list.empty() ? "" : ", ") + std::string(name);
      throw_at(file_, entry.first, fmt::format("unknown key '{}{}'; known keys: {}", prefix_, key, list));
    }
  }

  bool has(const char* key) const { return static_cast<bool>(map_[key]); }
  YAML::Node node(const char* key) const { return map_[key]; }

  std::string text(const char* key, bool required) const {
    const YAML::Node value = map_[key];
    if (!value) {
      if (required) missing(key);
      return {};
    }
    return scalar_text(value, file_, prefix_ + key);
  }

  // An integer >= `minimum`; absent optional fields return `fallback`.
  std::int64_t integer(const char* key, bool required, std::int64_t fallback = 0,
                       std::int64_t minimum = 1) const {
    const YAML::Node value = map_[key];
    if (!value) {
      if (required) missing(key);
      return fallback;
    }
    const std::string text = scalar_text(value, file_, prefix_ + key);
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size()) {
      throw_at(file_, value, fmt::format("'{}{}' must be a whole number, got '{}'", prefix_, key, text));
    }
    if (number < minimum) {
      throw_at(file_, value, fmt::format("'{}{}' must be {}, got {}", prefix_, key,
                                         minimum == 0 ? ">= 0" : "a positive size", number));
    }
    if (const std::optional<long double> limit = field_limit(prefix_ + key); limit && number > *limit) {
      throw_at(
          file_, value,
          fmt::format("'{}{}' = {} is over the limit of {:.0f}", prefix_, key, number, static_cast<double>(*limit)));
    }
    return number;
  }

  int small_integer(const char* key, bool required, int fallback = 0, int minimum = 1) const {
    const std::int64_t number = integer(key, required, fallback, minimum);
    if (number > std::numeric_limits<int>::max()) {
      throw_at(file_, map_[key], fmt::format("'{}{}' = {} is too large", prefix_, key, number));
    }
    return static_cast<int>(number);
  }

  bool flag(const char* key, bool fallback) const {
    const YAML::Node value = map_[key];
    if (!value) return fallback;
    const std::string text = scalar_text(value, file_, prefix_ + key);
    if (text == "true") return true;
    if (text == "false") return false;
    throw_at(file_, value, fmt::format("'{}{}' must be true or false, got '{}'", prefix_, key, text));
  }

  // One of `names`, returned as its index.
  template <std::size_t N>
  std::size_t choice(const char* key, const std::array<std::string_view, N>& names, bool required,
                     std::size_t fallback = 0) const {
    const YAML::Node value = map_[key];
    if (!value) {
      if (required) missing(key);
      return fallback;
    }
    const std::string text = scalar_text(value, file_, prefix_ + key);
    const auto match = std::find(names.begin(), names.end(), text);
    if (match != names.end()) return static_cast<std::size_t>(match - names.begin());
    throw_at(file_, value, fmt::format("'{}{}' must be {} or {}, got '{}'", prefix_, key, names[0], names[1], text));
  }

  [[noreturn]] void fail(const char* key, const std::string& message) const {
    throw_at(file_, map_[key] ? map_[key] : map_, message);
  }

 private:
  [[noreturn]] void missing(const char* key) const {
    throw_at(file_, map_, fmt::format("missing required field '{}{}'", prefix_, key));
  }

  const YAML::Node& map_;
  const std::string& file_;
  std::string prefix_;
};

YAML::Node section_map(const Fields& fields, const char* key, const std::string& file) {
  const YAML::Node node = fields.node(key);
  if (!node.IsMap()) throw_at(file, node, fmt::format("'{}' must be a map of its fields", key));
  return node;
}

MoeConfig parse_moe(const YAML::Node& node, const std::string& file, int layers) {
  const Fields fields(node, file, "moe.");
  fields.reject_unknown(kMoeKeys);
  MoeConfig moe;
  moe.experts = fields.small_integer("experts", true);
  moe.top_k = fields.small_integer("top_k", true);
  moe.expert_ffn = fields.small_integer("expert_ffn", true);
  moe.shared_experts = fields.small_integer("shared_experts", false, 0, 0);
  moe.dense_layers = fields.small_integer("dense_layers", false, 0, 0);
  if (moe.top_k > moe.experts) {
    fields.fail("top_k", fmt::format("'moe.top_k' ({}) exceeds 'moe.experts' ({}); a token picks top_k of the experts",
                                     moe.top_k, moe.experts));
  }
  if (moe.dense_layers > layers) {
    fields.fail("dense_layers", fmt::format("'moe.dense_layers' ({}) exceeds 'layers' ({})", moe.dense_layers, layers));
  }
  moe.router_groups = fields.small_integer("router_groups", false, 0, 0);
  moe.router_group_top_k = fields.small_integer("router_group_top_k", false, 0, 0);
  if ((moe.router_groups > 0) != (moe.router_group_top_k > 0)) {
    fields.fail(moe.router_groups > 0 ? "router_group_top_k" : "router_groups",
                "'moe.router_groups' and 'moe.router_group_top_k' come together (group-limited routing)");
  }
  if (moe.router_groups > 0 && moe.experts % moe.router_groups != 0) {
    fields.fail("router_groups",
                fmt::format("'moe.router_groups' ({}) must divide 'moe.experts' ({})", moe.router_groups, moe.experts));
  }
  if (moe.router_group_top_k > moe.router_groups) {
    fields.fail("router_group_top_k", fmt::format("'moe.router_group_top_k' ({}) exceeds 'moe.router_groups' ({})",
                                                  moe.router_group_top_k, moe.router_groups));
  }
  return moe;
}

MlaConfig parse_mla(const YAML::Node& node, const std::string& file) {
  const Fields fields(node, file, "mla.");
  fields.reject_unknown(kMlaKeys);
  MlaConfig mla;
  mla.q_lora_rank = fields.small_integer("q_lora_rank", false, 0, 0);  // 0: uncompressed queries
  mla.kv_lora_rank = fields.small_integer("kv_lora_rank", true);
  mla.qk_nope_head_dim = fields.small_integer("qk_nope_head_dim", true);
  mla.qk_rope_head_dim = fields.small_integer("qk_rope_head_dim", true);
  mla.v_head_dim = fields.small_integer("v_head_dim", true);
  return mla;
}

void parse_attention(const Fields& fields, ModelConfig& model) {
  model.heads = fields.small_integer("heads", true);
  model.kv_heads = fields.small_integer("kv_heads", false, model.heads);
  if (model.heads % model.kv_heads != 0) {
    fields.fail("kv_heads", fmt::format("'kv_heads' ({}) must divide 'heads' ({}): each key/value head serves a "
                                        "whole group of query heads",
                                        model.kv_heads, model.heads));
  }
  if (fields.has("head_dim")) {
    model.head_dim = fields.small_integer("head_dim", true);
  } else if (fields.has("mla")) {
    model.head_dim = 0;  // set from the MLA head sizes once they are read
  } else if (model.hidden % model.heads != 0) {
    fields.fail("heads", fmt::format("'heads' ({}) must divide 'hidden' ({}), or give 'head_dim'", model.heads,
                                     model.hidden));
  } else {
    model.head_dim = model.hidden / model.heads;
  }
}

ModelConfig parse_root(const YAML::Node& root, const std::string& file) {
  if (!root.IsMap()) throw_at(file, root, "a model file is a map of fields, e.g. 'layers: 32'");
  const Fields fields(root, file, "");
  fields.reject_unknown(kTopKeys);
  ModelConfig model;
  model.name = fields.text("name", true);
  if (fields.has("aliases")) model.aliases = scalar_or_list(fields.node("aliases"), file, "aliases");
  model.source = fields.text("source", false);
  model.layers = fields.small_integer("layers", true);
  model.hidden = fields.small_integer("hidden", true);
  model.ffn = fields.small_integer("ffn", true);
  parse_attention(fields, model);
  model.vocab = fields.integer("vocab", true);
  model.context = fields.small_integer("context", true);
  model.norm = fields.choice("norm", std::array<std::string_view, 2>{"layernorm", "rmsnorm"}, true) == 0
                   ? NormKind::kLayerNorm
                   : NormKind::kRmsNorm;
  constexpr std::array<MlpKind, 3> kMlpKinds{MlpKind::kGelu, MlpKind::kSwiglu, MlpKind::kSquaredRelu};
  model.mlp = kMlpKinds[static_cast<std::size_t>(
      fields.choice("mlp", std::array<std::string_view, 3>{"gelu", "swiglu", "squared_relu"}, true))];
  model.position = fields.choice("position_embedding", std::array<std::string_view, 2>{"rope", "learned"}, false) == 0
                       ? PositionEmbedding::kRope
                       : PositionEmbedding::kLearned;
  model.tied_embeddings = fields.flag("tied_embeddings", false);
  model.biases = fields.flag("biases", false);
  model.dropout = fields.flag("dropout", false);
  model.mtp_layers = fields.small_integer("mtp_layers", false, 0, 0);
  if (fields.has("moe")) model.moe = parse_moe(section_map(fields, "moe", file), file, model.layers);
  if (fields.has("mla")) {
    model.mla = parse_mla(section_map(fields, "mla", file), file);
    // Latent attention has no separate key/value heads; its query/key heads
    // are nope + rope wide.
    model.kv_heads = model.heads;
    if (model.head_dim == 0) model.head_dim = model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim;
  }
  return model;
}

// The zoo by the `name:` each file declares. The embedded file names are cut
// at their first dot ("llama3.1-405b" would read "llama3"), so they are not
// used as model names.
const std::vector<std::pair<std::string, const EmbeddedFile*>>& zoo_index() {
  static const auto index = [] {
    std::vector<std::pair<std::string, const EmbeddedFile*>> entries;
    for (const EmbeddedFile& file : embedded_files()) {
      if (file.kind != "models") continue;
      const YAML::Node root = YAML::Load(std::string(file.text));
      entries.emplace_back(root["name"].as<std::string>(), &file);
    }
    std::sort(entries.begin(), entries.end());
    return entries;
  }();
  return index;
}

}  // namespace

ModelConfig parse_model_yaml(const std::string& text, const std::string& source_name) {
  const YAML::Node root = parse_yaml_text(text, source_name);
  return read_yaml(source_name, [&] { return parse_root(root, source_name); });
}

ModelConfig load_model(const std::string& name_or_path) {
  std::error_code error;
  if (std::filesystem::is_regular_file(name_or_path, error)) {
    const std::string text = read_text_file(name_or_path, "model file");
    if (std::filesystem::path(name_or_path).extension() == ".json") return parse_hf_config(text, name_or_path);
    return parse_model_yaml(text, name_or_path);
  }
  const std::string key = name_key(name_or_path);
  std::vector<std::string> spellings;  // names and aliases, for suggestions
  std::vector<std::string> canonical;  // the name each spelling stands for
  for (const auto& [name, file] : zoo_index()) {
    const ModelConfig model = parse_model_yaml(std::string(file->text), "built-in model " + name);
    spellings.push_back(name);
    canonical.push_back(name);
    for (const std::string& alias : model.aliases) {
      spellings.push_back(alias);
      canonical.push_back(name);
    }
    if (name == name_or_path) return model;
  }
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    if (name_key(spellings[i]) == key) return load_model(canonical[i]);
  }
  throw InputError(fmt::format("unknown model '{}': not a file and not a built-in model{}; built-ins: {} (or a path "
                               "to a model YAML)",
                               name_or_path, did_you_mean(name_or_path, spellings, canonical),
                               fmt::join(zoo_model_names(), ", ")));
}

void check_sequence_length(const ModelConfig& model, int seq_len, bool allow_long_context) {
  if (seq_len < 1) throw InputError(fmt::format("--seq must be >= 1 (got {})", seq_len));
  if (seq_len <= model.context) {
    if (!allow_long_context) return;
    throw InputError(fmt::format("--allow-long-context: --seq {} is within {}'s context of {} tokens; drop it",
                                 seq_len, model.name, model.context));
  }
  if (model.position == PositionEmbedding::kLearned) {
    throw InputError(fmt::format("--seq {} exceeds {}'s {} learned positions: no longer sequence can run; use --seq "
                                 "{} or less",
                                 seq_len, model.name, model.context, model.context));
  }
  if (allow_long_context) return;
  throw InputError(fmt::format("--seq {} exceeds {}'s context of {} tokens, the positions it was trained for (RoPE "
                               "scaling extends them); pass --allow-long-context to cost them anyway",
                               seq_len, model.name, model.context));
}

std::vector<std::string> zoo_model_names() {
  std::vector<std::string> names;
  for (const auto& entry : zoo_index()) names.push_back(entry.first);
  return names;
}

void check_tensor_parallel(const ModelConfig& model, int tp) {
  // The sizes that divide both head counts (MLA shares no key-value heads).
  auto divides_heads = [&](int t) { return model.heads % t == 0 && (model.mla.enabled() || model.kv_heads % t == 0); };
  if (divides_heads(tp)) return;
  std::vector<int> valid;
  for (int t = 1; t <= model.heads; ++t) {
    if (divides_heads(t)) valid.push_back(t);
  }
  throw InputError(model.mla.enabled()
                       ? fmt::format("tensor-parallel size {} must divide the {} attention heads of '{}'; use one of {}",
                                     tp, model.heads, model.name, fmt::join(valid, ", "))
                       : fmt::format("tensor-parallel size {} must divide the {} attention heads and {} key/value "
                                     "heads of '{}'; use one of {}",
                                     tp, model.heads, model.kv_heads, model.name, fmt::join(valid, ", ")));
}

}  // namespace pipeplan::models
