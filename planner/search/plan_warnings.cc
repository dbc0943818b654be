#include "planner/search/plan_warnings.h"

#include <fmt/format.h>

#include <tuple>

namespace pipeplan::planner {

std::vector<std::string> request_warnings(const PlanRequest& request) {
  std::vector<std::string> warnings;
  const int per_node = request.hardware.gpus_per_node;
  if (request.gpus > per_node && request.gpus % per_node != 0) {
    warnings.push_back(fmt::format("{} GPUs do not fill whole nodes of {}: {} full nodes and {} GPUs of another; "
                                   "groups that span the part node talk over its network",
                                   request.gpus, per_node, request.gpus / per_node, request.gpus % per_node));
  }
  if (request.seq_len > request.model.context) {
    warnings.push_back(fmt::format("--seq {} is beyond {}'s context of {} tokens (--allow-long-context): costed as "
                                   "given, as a RoPE-scaled model would run it",
                                   request.seq_len, request.model.name, request.model.context));
  }
  return warnings;
}

void add_runtime_warnings(const PlanRequest& request, const PlanCandidate& best, std::vector<std::string>& warnings) {
  const models::RuntimeFlags& asked = request.runtime;
  // Why the data-parallel overlaps do not apply to this plan.
  std::string sync_reason = "it has d x c = 1: no data-parallel sync";
  if (best.dp * best.cp > 1) {
    sync_reason = fmt::format("its ZeRO-{} on one pipeline rank syncs beside each micro-batch's passes",
                              static_cast<int>(best.zero));
  }
  const std::string gather_reason =
      best.dp * best.cp > 1 && best.zero == models::ZeroStage::kNone ? "it shards no optimizer state" : sync_reason;
  const std::tuple<bool, bool, std::string> flags[] = {
      {asked.overlap_grad_reduce, best.runtime.overlap_grad_reduce, "--overlap-grad-reduce (" + sync_reason + ")"},
      {asked.overlap_param_gather, best.runtime.overlap_param_gather, "--overlap-param-gather (" + gather_reason + ")"},
      {asked.tp_comm_overlap, best.runtime.tp_comm_overlap,
       "--tp-comm-overlap (it needs t > 1 with sequence parallelism)"},
      {asked.optimizer_states_in_bf16, best.runtime.optimizer_states_in_bf16,
       fmt::format("--optimizer-states-in-bf16 (it runs in Megatron's distributed optimizer, ZeRO-1; the best plan "
                   "has ZeRO-{})",
                   static_cast<int>(best.zero))},
      {asked.master_weights_in_bf16, best.runtime.master_weights_in_bf16,
       fmt::format("--master-weights-in-bf16 (it runs in a distributed optimizer, ZeRO-1; the best plan has ZeRO-{})",
                   static_cast<int>(best.zero))},
      {asked.fp8_param_gather, best.runtime.fp8_param_gather,
       fmt::format("--fp8-param-gather (it runs in the distributed optimizer, ZeRO-1; the best plan has ZeRO-{})",
                   static_cast<int>(best.zero))},
      {asked.moe_a2a_overlap, best.runtime.moe_a2a_overlap,
       fmt::format(
           "--moe-a2a-overlap (it pairs Interleaved1F1B's passes with v >= 2; the best plan runs {} with v = {})",
           best.schedule, best.virtual_stages)},
      {request.routing.dispatcher == models::MoeDispatcher::kDeepEp, best.routing.dispatcher == models::MoeDispatcher::kDeepEp,
       "--moe-dispatcher deepep (it routes across an expert-parallel group; the best plan has ep 1)"},
      {request.routing.load_imbalance != 1.0, best.ep > 1,
       "--moe-load-imbalance (it is the busiest expert-parallel rank's share; the best plan has ep 1)"}};
  for (const auto& [asked_for, applied, name] : flags) {
    if (asked_for && !applied) warnings.push_back(fmt::format("{} does not apply to the best plan", name));
  }
  if (best.ep > 1 && best.routing.load_imbalance < request.routing.load_imbalance) {
    warnings.push_back(
        fmt::format("--moe-load-imbalance {} is applied as {} to the best plan: the busiest of its "
                    "ep = {} ranks gets at most {} x the average",
                    request.routing.load_imbalance, best.routing.load_imbalance, best.ep, best.ep));
  }
}

}  // namespace pipeplan::planner
