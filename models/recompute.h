// Activation recomputation, as Megatron-LM sets it: none; selective, with
// --recompute-modules naming the parts of each block whose activations are
// dropped after the forward and recomputed in the backward (core_attn by
// default); or full, only each block's input kept.
#pragma once

#include <string>
#include <string_view>

namespace pipeplan::models {

struct ModelConfig;

enum class Recompute { kNone, kSelective, kFull };

// Megatron's recompute modules that the cost model prices (a bit each).
enum RecomputeModule : unsigned {
  kCoreAttention = 1u << 0,  // core_attn: the attention core (its scores or softmax statistics)
  kMoeActivation = 1u << 1,  // moe_act: the routed experts' activation output
  kLayerNorm = 1u << 2,      // layernorm: both pre-norms' outputs
};
// Megatron's default with --recompute-granularity selective.
constexpr unsigned kDefaultRecomputeModules = kCoreAttention;
// What "selective" recomputes for `model` when no modules are named: with
// experts also their activations and the norms (Megatron's MoE recipes do;
// the experts keep most of a block's bytes), else Megatron's default.
unsigned default_recompute_modules(const ModelConfig& model);

// "none" | "selective" | "full"; throws InputError naming `field` (the
// option, or a file's key).
Recompute parse_recompute(std::string_view text, std::string_view field = "--recompute");
std::string_view recompute_name(Recompute recompute);

// Megatron's names, separated by commas or spaces ("moe_act,layernorm").
// Throws InputError naming `field` for an empty list, a repeated name, a
// module Megatron has that the cost model does not price (mlp, moe,
// shared_experts, mla_up_proj), or an unknown one.
unsigned parse_recompute_modules(std::string_view text, std::string_view field = "--recompute-modules");
// In Megatron's order: "core_attn,moe_act,layernorm".
std::string recompute_modules_name(unsigned modules, std::string_view separator = ",");
// What outputs show: "none", "full", "selective" (the default modules) or
// "selective:moe_act,layernorm".
std::string recompute_label(Recompute recompute, unsigned modules);

}  // namespace pipeplan::models
