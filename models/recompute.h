// Activation recomputation, as Megatron-LM sets it: none; selective, with
// --recompute-modules naming the parts of each block whose activations are
// dropped after the forward and recomputed in the backward (core_attn by
// default); or full, only each block's input kept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::models {

struct ModelConfig;

enum class Recompute { kNone, kSelective, kFull };

// Megatron's recompute modules that the cost model prices (a bit each).
enum RecomputeModule : unsigned {
  kCoreAttention = 1u << 0,  // core_attn: the attention core (its scores or softmax statistics)
  kMoeActivation = 1u << 1,  // moe_act: the routed experts' activation output
  kLayerNorm = 1u << 2,      // layernorm: both pre-norms' outputs
  // Whole modules, kept by their input and run again in the backward:
  kMlp = 1u << 3,            // mlp: a dense layer's MLP (Megatron skips it on expert layers)
  kMoe = 1u << 4,            // moe: an expert layer's whole mixture (router, dispatch, experts, combine)
  kSharedExperts = 1u << 5,  // shared_experts: the shared experts of an expert layer
  kMlaUpProj = 1u << 6,      // mla_up_proj: latent attention's Q, K, V, from the up-projections and rope
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
// Throws InputError naming `field` for an empty list, a repeated name or an
// unknown one.
unsigned parse_recompute_modules(std::string_view text, std::string_view field = "--recompute-modules");
// Why `model` has none of what `modules` recomputes (moe_act on a dense
// model, mlp where every layer has experts...), naming the modules it has,
// or empty.
std::string recompute_modules_refusal(const ModelConfig& model, unsigned modules);
// In Megatron's order: "core_attn,moe_act,layernorm".
std::string recompute_modules_name(unsigned modules, std::string_view separator = ",");
// What outputs show: "none", "full", "selective" (the default modules) or
// "selective:moe_act,layernorm".
std::string recompute_label(Recompute recompute, unsigned modules);

// Recomputation chosen per pipeline stage (AdaPipe's per-stage choice): the
// early stages of a 1F1B-like schedule hold more micro-batches than the late
// ones, so they may recompute while the others do not.
// "none,none,full,full" (commas or spaces), in stage order; throws
// InputError naming `field` for an empty list or a name parse_recompute
// refuses.
std::vector<Recompute> parse_stage_recompute(std::string_view text, std::string_view field);
// "none,none,full,full".
std::string stage_recompute_name(const std::vector<Recompute>& stages);
// {"none", "none", "full", "full"}: each stage's name (a JSON list).
std::vector<std::string> stage_recompute_names(const std::vector<Recompute>& stages);
// Whether `uniform` or some stage recomputes selectively (so that the
// recompute modules apply).
bool recomputes_selective(Recompute uniform, const std::vector<Recompute>& stages);
// What outputs show: runs of equal stages, "per-stage:none x6,full x2"
// (selective with its modules as recompute_label names them).
std::string stage_recompute_label(const std::vector<Recompute>& stages, unsigned modules);

}  // namespace pipeplan::models
