#include "models/layout_fields.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <limits>

#include "common/error.h"
#include "common/units.h"
#include "models/placement.h"

namespace pipeplan::models {
namespace {

// A whole number >= `minimum` (a size or count: 1).
int read_whole(std::string_view text, std::string_view field, int minimum) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw InputError(fmt::format("{} must be a whole number, got '{}'", field, text));
  }
  if (value < minimum) throw InputError(fmt::format("{} must be >= {} (got {})", field, minimum, value));
  return value;
}

int read_size(std::string_view text, std::string_view field) { return read_whole(text, field, 1); }

bool read_bool(std::string_view text, std::string_view field) {
  if (text != "true" && text != "false") throw InputError(fmt::format("{} must be true or false, got '{}'", field, text));
  return text == "true";
}

std::string number(double value) { return fmt::format("{}", value); }
std::string flag(bool on) { return on ? "true" : ""; }

// A runtime flag by its member: read as true or false, written when on.
template <bool RuntimeFlags::*member>
LayoutField runtime_flag(std::string_view name, std::string_view option, std::string_view help) {
  return {name, option, help, FieldKind::kFlag,
          [](std::string_view text, std::string_view field, JobLayout& layout) {
            layout.runtime.*member = read_bool(text, field);
          },
          [](const JobLayout& layout) { return flag(layout.runtime.*member); }};
}

// A size or count by its member (of RankLayout or PipelineLayout): a whole
// number >= 1, written always unless `write` says otherwise.
template <auto member>
LayoutField size_field(std::string_view key, std::string_view option, std::string_view help,
                       std::string (*write)(const JobLayout&) = nullptr) {
  return {key, option, help, FieldKind::kValue,
          [](std::string_view text, std::string_view field, JobLayout& layout) {
            layout.*member = read_size(text, field);
          },
          write != nullptr ? write : [](const JobLayout& layout) { return std::to_string(layout.*member); }};
}

// A routing figure, a number >= 0, written unless it is `omitted` (its
// default).
template <double MoeRouting::*member, int omitted>
LayoutField routing_number(std::string_view key, std::string_view option, std::string_view help) {
  return {key, option, help, FieldKind::kValue,
          [](std::string_view text, std::string_view field, JobLayout& layout) {
            layout.routing.*member = parse_non_negative(text, field);
          },
          [](const JobLayout& layout) {
            const double value = layout.routing.*member;
            return value != omitted ? number(value) : "";
          }};
}

void read_rank_order(std::string_view text, std::string_view field, JobLayout& layout) {
  layout.pipeline_first = parse_megatron_order(text, field);
}

// Megatron's default order is left out.
std::string write_rank_order(const JobLayout& layout) {
  return layout.pipeline_first ? std::string(megatron_order_name(true)) : "";
}

void read_recompute_modules(std::string_view text, std::string_view field, JobLayout& layout) {
  layout.recompute_modules = parse_recompute_modules(text, field);
}

// Written where they apply (some stage recomputes selectively) and differ
// from Megatron's default.
std::string write_recompute_modules(const JobLayout& layout) {
  const bool named = layout.recomputes_selective() && layout.recompute_modules != kDefaultRecomputeModules;
  return named ? recompute_modules_name(layout.recompute_modules) : "";
}

void read_recompute(std::string_view text, std::string_view field, JobLayout& layout) {
  if (text.find(',') != std::string_view::npos) {
    layout.stage_recompute = parse_stage_recompute(text, field);
    layout.recompute = Recompute::kNone;
    return;
  }
  layout.recompute = parse_recompute(text, field);
  layout.stage_recompute.clear();
}

const std::array<LayoutField, 29>& table() {
  static const std::array<LayoutField, 29> fields{{
      size_field<&JobLayout::tp>("tp", "tp", "Tensor-parallel size t (within an NVLink domain)"),
      size_field<&JobLayout::cp>(
          "cp", "cp",
          "Context-parallel size c: each rank takes s / c of every sequence, keys and values go round a ring "
          "(Megatron's --context-parallel-size)",
          [](const JobLayout& layout) { return layout.cp > 1 ? std::to_string(layout.cp) : ""; }),
      size_field<&JobLayout::pp>("pp", "pp",
                                 "Pipeline ranks p (Megatron's pipeline_model_parallel_size; each holds v model "
                                 "chunks)"),
      size_field<&JobLayout::dp>("dp", "dp", "Data-parallel size d (replicas of the pipeline)"),
      // Written for models with experts, etp resolved (0 is t).
      size_field<&JobLayout::ep>(
          "ep", "ep",
          "Expert-parallel size: a mixture of experts' experts divided over ep of the t x c x d ranks (Megatron's "
          "--expert-model-parallel-size)",
          [](const JobLayout& layout) { return layout.ep > 1 || layout.etp > 0 ? std::to_string(layout.ep) : ""; }),
      size_field<&JobLayout::etp>(
          "etp", "etp",
          "Expert tensor-parallel size: each expert split over etp ranks (Megatron's --expert-tensor-parallel-size)",
          [](const JobLayout& layout) {
            return layout.ep > 1 || layout.etp > 0 ? std::to_string(layout.expert_tp()) : "";
          }),
      {"mtp_layers", "mtp-layers",
       "Multi-token prediction modules to train, at most the model's (Megatron's --mtp-num-layers): each a "
       "projection, a block like the last and the shared output head, on the output layer's stage ('m' before "
       "'L' in a --layout)",
       FieldKind::kValue,
       [](std::string_view text, std::string_view field, JobLayout& layout) {
         layout.mtp_layers = read_whole(text, field, 0);
       },
       [](const JobLayout& layout) { return layout.mtp_layers > 0 ? std::to_string(layout.mtp_layers) : ""; }},
      routing_number<&MoeRouting::load_imbalance, 1>(
          "moe_load_imbalance", "moe-load-imbalance",
          "Routed tokens the busiest expert-parallel rank gets over the average in expectation, 1 to min(ep, "
          "experts / top-k); it sets the experts' pace, with each micro-batch's random spread on top (1 = balanced "
          "in expectation, as Megatron's force-balanced routing)"),
      routing_number<&MoeRouting::capacity_factor, 0>(
          "moe_capacity_factor", "moe-capacity-factor",
          "Drop tokens beyond this many times an expert's average (Megatron's --moe-expert-capacity-factor)"),
      {"moe_dispatcher", "moe-dispatcher",
       "How tokens reach their experts: alltoall (each of a token's top-k copies to its expert's rank) or deepep "
       "(once to each other node holding one of its experts, then over NVLink; it needs NVLink, and RDMA across nodes)",
       FieldKind::kValue,
       [](std::string_view text, std::string_view field, JobLayout& layout) {
         layout.routing.dispatcher = parse_moe_dispatcher(text, field);
       },
       [](const JobLayout& layout) {
         return layout.routing.dispatcher != MoeDispatcher::kAllToAll
                    ? std::string(moe_dispatcher_name(layout.routing.dispatcher))
                    : "";
       }},
      size_field<&JobLayout::micro_batch_size>("micro_batch_size", "micro-batch-size", "Sequences per micro-batch b"),
      size_field<&JobLayout::microbatches>("microbatches", "microbatches",
                                           "Micro-batches per iteration m, per data-parallel replica"),
      {"rank_order", "rank-order",
       "Megatron's rank order: tp-cp-ep-dp-pp (its default: replicas t apart, stages t x c x d apart) or tp-pp-dp "
       "(--use-tp-pp-dp-mapping: stages t apart, replicas t x p apart)",
       FieldKind::kValue, read_rank_order, write_rank_order},
      // Checked against the schedule registry by its readers (sim/ is above models/).
      {"schedule", "schedule", "The pipeline schedule, by name", FieldKind::kValue,
       [](std::string_view text, std::string_view, JobLayout& layout) { layout.schedule = std::string(text); },
       [](const JobLayout& layout) { return layout.schedule; }},
      size_field<&JobLayout::virtual_stages>("virtual", "virtual",
                                             "Model chunks (stages) per pipeline rank v, for looped schedules"),
      {"recompute", "recompute",
       "Activation recomputation: none, selective or full",
       FieldKind::kList, read_recompute,
       [](const JobLayout& layout) {
         return layout.stage_recompute.empty() ? std::string(recompute_name(layout.recompute))
                                               : stage_recompute_name(layout.stage_recompute);
       }},
      {"recompute_in_bubbles", "recompute-in-bubbles",
       "Run the recomputation as passes of their own before the backwards, in the pipeline's bubbles",
       FieldKind::kFlag,
       [](std::string_view text, std::string_view field, JobLayout& layout) {
         layout.recompute_in_bubbles = read_bool(text, field);
       },
       [](const JobLayout& layout) { return flag(layout.recompute_in_bubbles); }},
      {"recompute_modules", "recompute-modules",
       "Megatron's --recompute-modules for selective recomputation, comma-separated: core_attn (Megatron's "
       "default), moe_act, layernorm, and whole modules kept by their input and run again: mlp (dense layers), "
       "moe, shared_experts, and mla_up_proj (latent attention's Q, K, V); implies --recompute selective",
       FieldKind::kValue, read_recompute_modules, write_recompute_modules},
      {"sequence_parallel", "sequence-parallel",
       "Megatron sequence parallelism: norms and dropout split over the t ranks", FieldKind::kFlag,
       [](std::string_view text, std::string_view field, JobLayout& layout) {
         layout.sequence_parallel = read_bool(text, field);
       },
       [](const JobLayout& layout) { return std::string(layout.sequence_parallel ? "true" : "false"); }},
      {"zero", "zero",
       "Sharding over the d x c ranks holding the same weights: 0 none, 1 optimizer states (Megatron's distributed "
       "optimizer), 2 + gradients (reduce-scattered every micro-batch), 3 + weights (FSDP: gathered for every "
       "layer's forward and backward); on p > 1 both hold the weights and gradients whole through the step and "
       "sync once per step, as PyTorch's pipelining runs FSDP",
       FieldKind::kValue,
       [](std::string_view text, std::string_view field, JobLayout& layout) {
         const int stage = read_whole(text, field, std::numeric_limits<int>::min());
         if (stage < 0 || stage > 3) throw InputError(fmt::format("{} must be 0..3 (got {})", field, stage));
         layout.zero = static_cast<ZeroStage>(stage);
       },
       [](const JobLayout& layout) { return std::to_string(static_cast<int>(layout.zero)); }},
      runtime_flag<&RuntimeFlags::overlap_grad_reduce>(
          "overlap_grad_reduce", "overlap-grad-reduce",
          "Reduce each model chunk's gradients over d as soon as its last backward ends, behind the backward still "
          "running (Megatron's --overlap-grad-reduce; off: after the pipeline)"),
      runtime_flag<&RuntimeFlags::overlap_param_gather>(
          "overlap_param_gather", "overlap-param-gather",
          "With --zero 1 (or 2/3 on p > 1): gather the updated weights behind the next step's forward passes "
          "(Megatron's --overlap-param-gather; off: after the optimizer)"),
      runtime_flag<&RuntimeFlags::grad_reduce_in_bf16>(
          "grad_reduce_in_bf16", "grad-reduce-in-bf16",
          "Gradient buffers and their data-parallel reduction in bf16 instead of fp32 (Megatron's "
          "--grad-reduce-in-bf16)"),
      runtime_flag<&RuntimeFlags::tp_comm_overlap>(
          "tp_comm_overlap", "tp-comm-overlap",
          "With --sequence-parallel: each tensor-parallel all-gather and reduce-scatter in t chunks beside its GEMM "
          "(Megatron's --tp-comm-overlap; off: exposed)"),
      [] {
        LayoutField fp8 = runtime_flag<&RuntimeFlags::fp8>(
            "fp8", "precision",
            "GEMM precision of the transformer blocks' linear layers: bf16, or fp8 (Transformer Engine's recipe: "
            "attention, norms, embedding and output layer stay bf16)");
        fp8.kind = FieldKind::kValue;  // on the command line; a file's fp8 is true or false
        fp8.read_option = [](std::string_view text, std::string_view field, JobLayout& layout) {
          if (text != "bf16" && text != "fp8") {
            throw InputError(fmt::format("{}: '{}' is not a precision; give bf16 or fp8", field, text));
          }
          layout.runtime.fp8 = text == "fp8";
        };
        return fp8;
      }(),
      runtime_flag<&RuntimeFlags::fp8_param_gather>(
          "fp8_param_gather", "fp8-param-gather",
          "With --precision fp8 and --zero 1: the FP8 layers' weights kept in FP8 alone and gathered in FP8, 2 "
          "bytes a weight fewer (Megatron's --fp8-param-gather; Megatron-Bridge's FP8 recipes set it)"),
      runtime_flag<&RuntimeFlags::moe_a2a_overlap>(
          "moe_a2a_overlap", "moe-a2a-overlap",
          "A mixture of experts' all-to-all hidden by pairing each steady-state forward with the backward after it "
          "(Megatron's --overlap-moe-expert-parallel-comm, combined 1F1B)"),
      runtime_flag<&RuntimeFlags::optimizer_states_in_bf16>(
          "optimizer_states_in_bf16", "optimizer-states-in-bf16",
          "With --zero 1: Adam's moments in bf16 beside fp32 master weights, 8 bytes of optimizer state a parameter "
          "for 12 (Megatron's --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)"),
      runtime_flag<&RuntimeFlags::master_weights_in_bf16>(
          "master_weights_in_bf16", "master-weights-in-bf16",
          "With --zero 1: the optimizer's master weights in bf16, 2 bytes a parameter for 4 (NeMo's "
          "distributed_fused_adam with optim.dtype bf16, which keeps the moments in bf16 too: give "
          "--optimizer-states-in-bf16 with it; Megatron-LM keeps fp32 master weights)"),
  }};
  return fields;
}

}  // namespace

std::span<const LayoutField> layout_fields() { return table(); }

const LayoutField* find_layout_field(std::string_view key_or_option) {
  for (const LayoutField& field : table()) {
    if (field.key == key_or_option || field.option == key_or_option) return &field;
  }
  return nullptr;
}

void read_option_value(const LayoutField& field, std::string_view text, JobLayout& layout) {
  const std::string name = fmt::format("--{}", field.option);
  (field.read_option != nullptr ? field.read_option : field.read)(text, name, layout);
}

}  // namespace pipeplan::models
