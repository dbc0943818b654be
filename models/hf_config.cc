#include "models/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.h"
#include "models/model_limits.h"

namespace pipeplan::models {
namespace {

using nlohmann::json;

enum class Family { kLlama, kMixtral, kQwenMoe, kDeepSeek, kGpt2, kGptNeox, kGemma };

struct Architecture {
  std::string_view model_type;
  Family family;
};

// model_type as transformers writes it; Mistral, Qwen2/3 and Phi-3 share
// Llama's field names.
constexpr std::array<Architecture, 14> kArchitectures{{
    {"llama", Family::kLlama},        {"mistral", Family::kLlama},      {"qwen2", Family::kLlama},
    {"qwen3", Family::kLlama},        {"phi3", Family::kLlama},         {"mixtral", Family::kMixtral},
    {"qwen2_moe", Family::kQwenMoe},  {"qwen3_moe", Family::kQwenMoe},  {"deepseek_v2", Family::kDeepSeek},
    {"deepseek_v3", Family::kDeepSeek}, {"gpt2", Family::kGpt2},        {"gpt_neox", Family::kGptNeox},
    {"gemma", Family::kGemma},        {"gemma2", Family::kGemma},
}};

// Line and column of byte `offset` (1-based), for a parse error.
std::pair<int, int> line_and_column(const std::string& text, std::size_t offset) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// The fields of one config, read with errors that name the file, the
// architecture and the field.
class Config {
 public:
  Config(const json& root, std::string source, std::string model_type)
      : root_(root), source_(std::move(source)), model_type_(std::move(model_type)) {}

  bool has(const char* key) const { return root_.contains(key) && !root_[key].is_null(); }

  // A whole number >= `minimum`; `fallback` where absent or null, unless required.
  std::int64_t integer(const char* key, bool required, std::int64_t fallback = 0, std::int64_t minimum = 1) const {
    if (!has(key)) {
      if (required) fail(key, "is missing; a config of this architecture gives it");
      return fallback;
    }
    const json& value = root_[key];
    if (!value.is_number_integer()) fail(key, fmt::format("must be a whole number, got {}", value.dump()));
    const auto number = value.get<std::int64_t>();
    if (number < minimum) fail(key, fmt::format("must be at least {}, got {}", minimum, number));
    if (number > static_cast<std::int64_t>(kMaxTokens)) fail(key, fmt::format("= {} is over any real model's", number));
    return number;
  }
  int small(const char* key, bool required, int fallback = 0, int minimum = 1) const {
    return static_cast<int>(integer(key, required, fallback, minimum));
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!root_[key].is_number()) fail(key, fmt::format("must be a number, got {}", root_[key].dump()));
    return root_[key].get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!root_[key].is_boolean()) fail(key, fmt::format("must be true or false, got {}", root_[key].dump()));
    return root_[key].get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!root_[key].is_string()) fail(key, fmt::format("must be a string, got {}", root_[key].dump()));
    return root_[key].get<std::string>();
  }
  // A list field that must be empty for the model to be read.
  void require_empty(const char* key, const char* why) const {
    if (has(key) && !(root_[key].is_array() && root_[key].empty())) fail(key, why);
  }

  [[noreturn]] void fail(const char* key, const std::string& message) const {
    throw InputError(fmt::format("{}: '{}' of this {} config {}", source_, key, model_type_, message));
  }

 private:
  const json& root_;
  std::string source_;
  std::string model_type_;
};

std::string model_name(const std::string& source) {
  const std::filesystem::path path(source);
  if (path.filename() == "config.json" && path.has_parent_path() && !path.parent_path().filename().empty()) {
    return path.parent_path().filename().string();
  }
  return path.stem().string();
}

// A gated MLP (SwiGLU, or Gemma's GeGLU: the same three matrices) or a
// plain one, from the activation's name.
MlpKind mlp_kind(const Config& config, const char* key, bool gated) {
  const std::string activation = config.text(key, gated ? "silu" : "gelu");
  if (activation == "relu2" || activation == "squared_relu") return MlpKind::kSquaredRelu;
  const bool gelu = activation.starts_with("gelu");
  if (!gelu && activation != "silu" && activation != "swish") {
    config.fail(key, fmt::format("names '{}', an activation not costed (silu, gelu or relu2)", activation));
  }
  return gated ? MlpKind::kSwiglu : MlpKind::kGelu;
}

void read_attention(const Config& config, ModelConfig& model) {
  model.heads = config.small("num_attention_heads", true);
  model.kv_heads = config.small("num_key_value_heads", false, model.heads);
  if (model.heads % model.kv_heads != 0) {
    config.fail("num_key_value_heads", fmt::format("({}) must divide num_attention_heads ({})", model.kv_heads, model.heads));
  }
  if (config.has("head_dim")) {
    model.head_dim = config.small("head_dim", true);
  } else if (model.hidden % model.heads != 0) {
    config.fail("num_attention_heads", fmt::format("({}) must divide hidden_size ({}) when head_dim is not given",
                                                   model.heads, model.hidden));
  } else {
    model.head_dim = model.hidden / model.heads;
  }
}

// Sliding-window attention is not costed: sequences up to the window cost
// exactly what full attention costs, so the window bounds the context.
void apply_sliding_window(const Config& config, ModelConfig& model) {
  if (!config.has("sliding_window") || !config.flag("use_sliding_window", true)) return;
  const int window = config.small("sliding_window", true);
  model.context = std::min(model.context, window);
}

// The sizes Llama's and GPT-NeoX's field names give alike.
void read_sizes(const Config& config, ModelConfig& model) {
  model.layers = config.small("num_hidden_layers", true);
  model.hidden = config.small("hidden_size", true);
  model.ffn = config.small("intermediate_size", true);
  read_attention(config, model);
  model.vocab = config.integer("vocab_size", true);
  model.context = config.small("max_position_embeddings", true);
}

void read_llama_like(const Config& config, Family family, ModelConfig& model) {
  read_sizes(config, model);
  model.norm = NormKind::kRmsNorm;
  model.position = PositionEmbedding::kRope;
  const bool gemma = family == Family::kGemma;
  model.mlp = mlp_kind(config, config.has("hidden_activation") ? "hidden_activation" : "hidden_act", true);
  model.tied_embeddings = config.flag("tie_word_embeddings", gemma);
  // Biases on every linear layer; Qwen2's on the QKV projection alone are
  // under 0.01 % of its weights and left out.
  model.biases = config.flag("attention_bias", false) && config.flag("mlp_bias", false);
  model.dropout = config.number("attention_dropout", 0) > 0;
  apply_sliding_window(config, model);
}

void read_gpt2(const Config& config, ModelConfig& model) {
  model.layers = config.small("n_layer", true);
  model.hidden = config.small("n_embd", true);
  model.ffn = config.small("n_inner", false, 4 * model.hidden);
  model.heads = config.small("n_head", true);
  model.kv_heads = model.heads;
  if (model.hidden % model.heads != 0) {
    config.fail("n_head", fmt::format("({}) must divide n_embd ({})", model.heads, model.hidden));
  }
  model.head_dim = model.hidden / model.heads;
  model.vocab = config.integer("vocab_size", true);
  model.context = config.small("n_positions", true);
  model.norm = NormKind::kLayerNorm;
  model.mlp = mlp_kind(config, "activation_function", false);
  model.position = PositionEmbedding::kLearned;
  model.tied_embeddings = config.flag("tie_word_embeddings", true);
  model.biases = true;
  model.dropout = config.number("resid_pdrop", 0.1) > 0 || config.number("attn_pdrop", 0.1) > 0;
}

void read_gpt_neox(const Config& config, ModelConfig& model) {
  read_sizes(config, model);
  model.norm = NormKind::kLayerNorm;
  model.mlp = mlp_kind(config, "hidden_act", false);
  model.position = PositionEmbedding::kRope;
  model.tied_embeddings = config.flag("tie_word_embeddings", false);
  model.biases = config.flag("attention_bias", true);
  model.dropout = config.number("hidden_dropout", 0) > 0 || config.number("attention_dropout", 0) > 0;
}

void read_experts(const Config& config, Family family, ModelConfig& model) {
  if (family != Family::kMixtral && family != Family::kQwenMoe && family != Family::kDeepSeek) return;
  MoeConfig& moe = model.moe;
  moe.top_k = config.small("num_experts_per_tok", true);
  switch (family) {
    case Family::kMixtral:
      moe.experts = config.small("num_local_experts", true);
      moe.expert_ffn = model.ffn;
      break;
    case Family::kQwenMoe: {
      moe.experts = config.small("num_experts", true);
      moe.expert_ffn = config.small("moe_intermediate_size", true);
      if (config.integer("decoder_sparse_step", false, 1) != 1) {
        config.fail("decoder_sparse_step", "is not 1: dense layers between expert layers are not read");
      }
      config.require_empty("mlp_only_layers", "lists dense layers among the expert layers, which are not read");
      // Qwen2-MoE's shared expert is one wide MLP: as many experts' worth.
      const int shared = config.small("shared_expert_intermediate_size", false, 0, 0);
      if (shared % moe.expert_ffn != 0) {
        config.fail("shared_expert_intermediate_size",
                    fmt::format("({}) is not a whole number of experts of {}", shared, moe.expert_ffn));
      }
      moe.shared_experts = shared / moe.expert_ffn;
      break;
    }
    case Family::kDeepSeek:
      moe.experts = config.small("n_routed_experts", true);
      moe.expert_ffn = config.small("moe_intermediate_size", true);
      moe.shared_experts = config.small("n_shared_experts", false, 0, 0);
      moe.dense_layers = config.small("first_k_dense_replace", false, 0, 0);
      model.mtp_layers = config.small("num_nextn_predict_layers", false, 0, 0);
      if (config.integer("moe_layer_freq", false, 1) != 1) {
        config.fail("moe_layer_freq", "is not 1: dense layers between expert layers are not read");
      }
      // Group-limited routing, where the groups limit anything.
      if (config.has("n_group") && config.small("n_group", true) > 1) {
        moe.router_groups = config.small("n_group", true);
        moe.router_group_top_k = config.small("topk_group", true);
        if (moe.router_group_top_k > moe.router_groups) {
          config.fail("topk_group", fmt::format("({}) exceeds n_group ({}): a token cannot pick more groups than "
                                                "there are",
                                                moe.router_group_top_k, moe.router_groups));
        }
        if (moe.experts % moe.router_groups != 0) {
          config.fail("n_group", fmt::format("({}) does not divide the {} routed experts into equal groups",
                                             moe.router_groups, moe.experts));
        }
      }
      break;
    default: return;
  }
  if (moe.top_k > moe.experts) {
    config.fail("num_experts_per_tok", fmt::format("({}) exceeds the {} experts", moe.top_k, moe.experts));
  }
  if (moe.dense_layers > model.layers) {
    config.fail("first_k_dense_replace", fmt::format("({}) exceeds the {} layers", moe.dense_layers, model.layers));
  }
}

void read_latent_attention(const Config& config, ModelConfig& model) {
  MlaConfig& mla = model.mla;
  mla.q_lora_rank = config.small("q_lora_rank", false, 0, 0);
  mla.kv_lora_rank = config.small("kv_lora_rank", true);
  mla.qk_nope_head_dim = config.small("qk_nope_head_dim", true);
  mla.qk_rope_head_dim = config.small("qk_rope_head_dim", true);
  mla.v_head_dim = config.small("v_head_dim", true);
  model.kv_heads = model.heads;
  model.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
}

}  // namespace

std::vector<std::string> hf_model_types() {
  std::vector<std::string> types;
  for (const Architecture& architecture : kArchitectures) types.emplace_back(architecture.model_type);
  return types;
}

ModelConfig parse_hf_config(const std::string& text, const std::string& source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& error) {
    const auto [line, column] = line_and_column(text, error.byte > 0 ? error.byte - 1 : 0);
    std::string what = error.what();
    const std::size_t colon = what.find(": ", what.find("parse error"));
    throw ParseError(source, line, column,
                     "malformed JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::exception& error) {  // a number out of range, text not UTF-8
    throw InputError(fmt::format("{}: malformed JSON: {}", source, error.what()));
  }
  if (!root.is_object()) throw InputError(fmt::format("{}: a config.json is one JSON object", source));
  if (!root.contains("model_type") || !root["model_type"].is_string()) {
    throw InputError(fmt::format("{}: no 'model_type' string: not a Hugging Face model config", source));
  }
  const std::string model_type = root["model_type"].get<std::string>();
  const auto found = std::find_if(kArchitectures.begin(), kArchitectures.end(),
                                  [&](const Architecture& a) { return a.model_type == model_type; });
  if (found == kArchitectures.end()) {
    throw InputError(fmt::format("{}: model_type '{}' is not an architecture pipeplan reads ({}); write a model YAML "
                                 "for it (configs/models/ has examples)",
                                 source, model_type, fmt::join(hf_model_types(), ", ")));
  }
  const Config config(root, source, model_type);
  ModelConfig model;
  model.name = model_name(source);
  model.source = source;
  switch (found->family) {
    case Family::kGpt2: read_gpt2(config, model); break;
    case Family::kGptNeox: read_gpt_neox(config, model); break;
    default: read_llama_like(config, found->family, model); break;
  }
  read_experts(config, found->family, model);
  if (found->family == Family::kDeepSeek) {
    // Latent attention's other fields without its rank: read as plain
    // attention, the model would be costed wrong without a word.
    for (const char* latent : {"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (config.has(latent) && !config.has("kv_lora_rank")) {
        config.fail("kv_lora_rank", fmt::format("is missing beside '{}': latent attention (MLA) needs it", latent));
      }
    }
    if (config.has("kv_lora_rank")) read_latent_attention(config, model);
  }
  return model;
}

}  // namespace pipeplan::models
