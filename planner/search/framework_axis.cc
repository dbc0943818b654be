#include "planner/search/framework_axis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "planner/search/search_space.h"

namespace pipeplan::planner {
namespace {

// A small layout the framework runs: two pipeline ranks of 1F1B, two data-
// parallel replicas with the first sharding it runs there (or one pipeline
// rank when `pipelined` is false), nothing else.
models::JobLayout runnable_base(step::Framework framework, bool pipelined) {
  models::JobLayout base;
  base.pp = pipelined ? 2 : 1;
  base.dp = 2;
  base.microbatches = 4;
  base.virtual_stages = 1;
  base.schedule = "1F1B";
  base.zero = step::zero_stages_run(framework, base).front();
  return base;
}

// Why the framework runs no layout with `fixed` applied (the reason at the
// pipeline depths the request leaves possible), or null when one runs.
const char* refusal_with(const PlanRequest& request, const std::function<void(models::JobLayout&)>& fixed) {
  const char* first_reason = nullptr;
  for (bool pipelined : {true, false}) {
    if (request.pp && (*request.pp > 1) != pipelined) continue;
    models::JobLayout layout = runnable_base(request.framework, pipelined);
    fixed(layout);
    // The sharding the framework runs at the degrees the choice set, unless it is the choice.
    if (!request.zero) layout.zero = step::zero_stages_run(request.framework, layout).front();
    const char* reason = step::framework_refusal(request.framework, layout, request.seq_len);
    if (reason == nullptr) return nullptr;
    if (first_reason == nullptr) first_reason = reason;
  }
  return first_reason;
}

struct FixedChoice {
  std::string option;  // as the user gave it: "--zero 3"
  std::function<void(models::JobLayout&)> apply;
};

// The fixed choices a framework's rules read, each applied alone.
std::vector<FixedChoice> fixed_choices(const PlanRequest& request) {
  std::vector<FixedChoice> choices;
  if (request.zero) {
    const models::ZeroStage zero = *request.zero;
    choices.push_back({fmt::format("--zero {}", static_cast<int>(zero)), [zero](models::JobLayout& l) { l.zero = zero; }});
  }
  if (request.cp && *request.cp > 1) {
    const int cp = *request.cp;
    choices.push_back({fmt::format("--cp {}", cp), [cp](models::JobLayout& l) { l.cp = cp; }});
  }
  if (request.sequence_parallel == false && request.tp.value_or(2) > 1) {
    const int tp = request.tp.value_or(2);
    choices.push_back({"--no-sequence-parallel", [tp](models::JobLayout& l) {
                         l.tp = tp;
                         l.sequence_parallel = false;
                       }});
  }
  if (request.recompute || request.recompute_modules) {
    const models::Recompute recompute = request.recompute_modules ? models::Recompute::kSelective : *request.recompute;
    const unsigned modules = request.recompute_modules.value_or(models::kDefaultRecomputeModules);
    choices.push_back({request.recompute_modules ? "--recompute-modules" : fmt::format("--recompute {}", models::recompute_name(recompute)),
                       [recompute, modules](models::JobLayout& l) {
                         l.recompute = recompute;
                         l.recompute_modules = modules;
                       }});
  }
  if (request.recompute_in_bubbles) {
    choices.push_back({"--recompute-in-bubbles", [](models::JobLayout& l) {
                         l.recompute = models::Recompute::kFull;
                         l.recompute_in_bubbles = true;
                       }});
  }
  if (request.rank_order == true) {
    choices.push_back({"--rank-order tp-pp-dp", [](models::JobLayout& l) { l.pipeline_first = true; }});
  }
  const models::RuntimeFlags& runtime = request.runtime;
  const std::pair<bool models::RuntimeFlags::*, const char*> flags[] = {
      {&models::RuntimeFlags::grad_reduce_in_bf16, "--grad-reduce-in-bf16"},
      {&models::RuntimeFlags::optimizer_states_in_bf16, "--optimizer-states-in-bf16"},
      {&models::RuntimeFlags::master_weights_in_bf16, "--master-weights-in-bf16"},
      {&models::RuntimeFlags::fp8_param_gather, "--fp8-param-gather"},
      {&models::RuntimeFlags::tp_comm_overlap, "--tp-comm-overlap"},
      {&models::RuntimeFlags::moe_a2a_overlap, "--moe-a2a-overlap"}};
  for (const auto& [flag, option] : flags) {
    if (!(runtime.*flag)) continue;
    choices.push_back({option, [flag = flag](models::JobLayout& l) {
                         l.runtime.*flag = true;
                         // The overlaps that need them: t > 1 with sequence parallelism, experts.
                         l.tp = 2;
                         l.sequence_parallel = true;
                         l.ep = 2;
                       }});
  }
  if (request.routing.capacity_factor > 0) {
    const double factor = request.routing.capacity_factor;
    choices.push_back({fmt::format("--moe-capacity-factor {}", factor),
                       [factor](models::JobLayout& l) { l.routing.capacity_factor = factor; }});
  }
  if (request.mtp_layers > 0) {
    const int modules = request.mtp_layers;
    choices.push_back(
        {fmt::format("--mtp-layers {}", modules), [modules](models::JobLayout& l) { l.mtp_layers = modules; }});
  }
  if (request.routing.dispatcher == models::MoeDispatcher::kDeepEp) {
    choices.push_back({"--moe-dispatcher deepep", [](models::JobLayout& l) {
                         l.routing.dispatcher = models::MoeDispatcher::kDeepEp;
                         l.ep = 2;
                         l.etp = 1;
                       }});
  }
  return choices;
}

// The schedules the framework runs of those --schedule names (one chunk per
// rank, or two for the V and looped ones, on m a multiple of p).
void check_schedules(const PlanRequest& request) {
  if (!request.schedule || request.pp == 1) return;
  const std::vector<const sim::ScheduleFamily*> families =
      is_schedule_set(*request.schedule) ? schedule_set_families(*request.schedule)
                                         : std::vector<const sim::ScheduleFamily*>{&sim::find_schedule_family(*request.schedule)};
  const char* reason = nullptr;
  for (const sim::ScheduleFamily* family : families) {
    models::JobLayout layout = runnable_base(request.framework, true);
    layout.schedule = family->name;
    layout.virtual_stages = request.virtual_stages.value_or(family->default_virtual_stages);
    if (layout.zero >= models::ZeroStage::kGradients && !sim::runs_in_pytorch_pipelining(*family)) {
      layout.zero = models::ZeroStage::kNone;
    }
    reason = step::framework_refusal(request.framework, layout, request.seq_len);
    if (reason == nullptr) return;
  }
  std::vector<std::string> runs;
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    models::JobLayout layout = runnable_base(request.framework, true);
    layout.schedule = family.name;
    layout.virtual_stages = family.default_virtual_stages;
    if (!sim::is_searched(family) && step::framework_refusal(request.framework, layout, request.seq_len) == nullptr) {
      runs.emplace_back(family.name);
    }
  }
  const step::FrameworkInfo& info = step::framework_info(request.framework);
  throw InputError(fmt::format("--schedule {}: {} {} does not run it ({}); it runs {}: use one of them, or drop "
                               "--schedule",
                               *request.schedule, info.name, info.version, reason, fmt::join(runs, ", ")));
}

// A framework that splits the model itself takes no other split: a
// --layout, --layers other than its own, or another --partition.
void check_split(const PlanRequest& request, const step::FrameworkInfo& info, int blocks) {
  if ((step::framework_bit(request.framework) & step::kSplitsItself) == 0) return;
  std::string option;
  if (request.layout) option = "--layout " + *request.layout;
  if (request.layer_counts && request.layer_counts->size() > 1) {
    const step::StageSplit given = step::split_from_counts(*request.layer_counts, blocks);
    if (step::split_refusal(request.framework, given) != nullptr) {
      option = fmt::format("--layers {}", fmt::join(*request.layer_counts, ","));
    }
  }
  if (request.partition == step::PartitionMethod::kTime) option = "--partition time";
  if (request.partition == step::PartitionMethod::kParameters) option = "--partition parameters";
  if (option.empty()) return;
  throw InputError(fmt::format("{}: {} {} splits the blocks itself (PipelineModule, partition_method="
                               "'type:transformer': the first L mod p stages one block more); drop {}",
                               option, info.name, info.version, option.substr(0, option.find(' '))));
}

}  // namespace

void check_framework_choices(const PlanRequest& request) {
  if (request.framework == step::Framework::kAny) return;
  check_schedules(request);
  const step::FrameworkInfo& info = step::framework_info(request.framework);
  check_split(request, info, request.model.layers);
  for (const FixedChoice& choice : fixed_choices(request)) {
    if (const char* reason = refusal_with(request, choice.apply)) {
      throw InputError(fmt::format("{}: {} {} does not run {}; drop {} or plan with --framework any", choice.option,
                                   info.name, info.version, reason, choice.option));
    }
  }
}

}  // namespace pipeplan::planner
