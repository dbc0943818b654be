// A decoder-only transformer's shape, as read from a model YAML (the zoo in
// configs/models/, built into the binary, or a user's file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipeplan::models {

enum class NormKind { kLayerNorm, kRmsNorm };
enum class MlpKind { kGelu, kSwiglu, kSquaredRelu };
enum class PositionEmbedding { kRope, kLearned };

// Mixture of experts: layers after the leading `dense_layers` route each
// token to `top_k` of `experts` experts of `expert_ffn` hidden units, plus
// `shared_experts` always-on experts of the same size. Group-limited
// routing (DeepSeek-V3's node-limited routing; Megatron's
// --moe-router-num-groups and --moe-router-group-topk): the experts form
// `router_groups` groups and a token's top_k come from `router_group_top_k`
// of them (0: no limit).
struct MoeConfig {
  int experts = 0;
  int top_k = 0;
  int expert_ffn = 0;
  int shared_experts = 0;
  int dense_layers = 0;
  int router_groups = 0;
  int router_group_top_k = 0;
  bool enabled() const { return experts > 0; }
};

// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values go
// through low-rank projections; q_lora_rank 0 means uncompressed queries.
struct MlaConfig {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

struct ModelConfig {
  std::string name;
  std::vector<std::string> aliases;  // other spellings users type ("llama3-405b")
  std::string source;  // the official config it was taken from
  int layers = 0;
  int hidden = 0;
  int ffn = 0;         // dense MLP hidden size
  int heads = 0;
  int kv_heads = 0;    // = heads for multi-head attention, fewer for GQA
  int head_dim = 0;    // hidden / heads unless given
  std::int64_t vocab = 0;
  int context = 0;     // maximum sequence length
  NormKind norm = NormKind::kLayerNorm;
  MlpKind mlp = MlpKind::kGelu;
  PositionEmbedding position = PositionEmbedding::kRope;
  bool tied_embeddings = false;
  bool biases = false;   // linear layers carry biases (GPT-3, Megatron's GPT)
  bool dropout = false;  // hidden and attention dropout (their masks are stored)
  // Multi-token prediction modules (DeepSeek-V3: 1), each predicting one more
  // token ahead: a projection, one block like the last and the shared output
  // head. What a run trains of them is its --mtp-layers.
  int mtp_layers = 0;
  MoeConfig moe;
  MlaConfig mla;
};

// A zoo name ("llama3-70b"), one of its aliases or a spelling of either that
// differs in case and punctuation ("Llama-3-70B"), or a path to a YAML file.
// Throws InputError (unknown name: the close names and the zoo) or
// ParseError (file, line, field).
ModelConfig load_model(const std::string& name_or_path);
// Parses YAML text; `source_name` is used in error messages.
ModelConfig parse_model_yaml(const std::string& text, const std::string& source_name);
std::vector<std::string> zoo_model_names();

// Refuses a sequence of over the model's context (what its position
// embedding was trained for) unless `allow_long_context`: such a run needs
// context parallelism or RoPE scaling, which the cost model does not apply.
// `allow_long_context` with a sequence within the context is refused too
// (it would change nothing).
void check_sequence_length(const ModelConfig& model, int seq_len, bool allow_long_context);
// Throws InputError unless `tp` divides the model's attention and key-value
// heads (listing the sizes that do).
void check_tensor_parallel(const ModelConfig& model, int tp);

}  // namespace pipeplan::models
