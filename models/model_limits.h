// Bounds on a model's sizes, so that no count sizes an allocation or
// overflows before it is refused: checked where a model file gives a field
// (with its line) and again on every model the layers are expanded for.
#pragma once

#include <optional>
#include <string_view>

namespace pipeplan::models {

constexpr long double kMaxDimension = 1 << 20;  // hidden, ffn, head sizes, ranks
constexpr long double kMaxCount = 1 << 16;      // layers, heads, experts
constexpr long double kMaxVocab = 1 << 27;
constexpr long double kMaxParams = 0x1p50L;         // about 10^15
constexpr long double kMaxTokens = 0x1p28L;         // per micro-batch, b x s
constexpr long double kMaxScoreElements = 0x1p56L;  // b x heads x s^2
// Far beyond any cluster built (the largest are about 10^5 GPUs), and small
// enough that every count of GPUs stays an int.
constexpr long long kMaxGpus = 10'000'000;
constexpr long double kMaxSequencesPerStep = 0x1p31L - 1;  // b x m x d, the global batch

// The bound on a model file's field ("layers", "moe.experts"), if it has one.
constexpr std::optional<long double> field_limit(std::string_view field) {
  for (std::string_view count :
       {"layers", "heads", "kv_heads", "moe.experts", "moe.top_k", "moe.shared_experts", "moe.dense_layers"}) {
    if (field == count) return kMaxCount;
  }
  for (std::string_view dimension :
       {"hidden", "ffn", "head_dim", "moe.expert_ffn", "mla.q_lora_rank", "mla.kv_lora_rank", "mla.qk_nope_head_dim",
        "mla.qk_rope_head_dim", "mla.v_head_dim"}) {
    if (field == dimension) return kMaxDimension;
  }
  if (field == "vocab") return kMaxVocab;
  if (field == "context") return kMaxTokens;
  return std::nullopt;
}

}  // namespace pipeplan::models
