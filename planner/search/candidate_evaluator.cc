#include "planner/search/candidate_evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "common/error.h"
#include "common/parallel.h"
#include "models/layers.h"
#include "models/training_state.h"
#include "planner/goodput/goodput_objective.h"
#include "planner/search/candidate_bounds.h"
#include "planner/search/schedule_context.h"
#include "planner/search/sharding_choices.h"
#include "planner/search/search_contexts.h"
#include "planner/search/search_split.h"
#include "planner/search/stage_recompute_split.h"
#include "sim/generators/registry.h"
#include "sim/search/searched_schedule.h"
#include "step/layer_table.h"
#include "step/model_simulation.h"
#include "step/profile_costs.h"
#include "step/searched_order.h"
#include "step/zero_support.h"

namespace pipeplan::planner {
namespace {

// The frameworks that cannot make the request's own split (a --layers or
// --layout) over `stages`: those that split a model themselves, unless
// theirs is the one given.
step::FrameworkSet refusing_given_split(const PlanRequest& request, int blocks, int stages) {
  if (stages <= 1 || (!request.layer_counts && !request.layout)) return 0;
  if (request.layout) return step::kSplitsItself;
  const step::StageSplit given = step::split_from_counts(*request.layer_counts, blocks);
  return step::split_refusal(step::Framework::kDeepSpeed, given) != nullptr ? step::kSplitsItself : 0;
}

constexpr const char* kOutOfMemory = "out of memory";
constexpr const char* kNoSchedule = "schedule precondition (micro-batches, chunks)";
constexpr const char* kPerStageWithChunks = "per-stage recompute with several chunks per rank or a searched order";
constexpr const char* kPerStageNoneFits = "per-stage recompute where none fits at its fastest split";
constexpr const char* kNothingToRecompute =
    "recomputation in the bubbles without recomputation (the plain candidate)";

// Per-stage recomputation is split exactly with one chunk per rank (each
// stage's peaks known before the costs); a searched order has none.
bool splits_per_stage(const ScheduleChoice& choice) {
  return choice.virtual_stages == 1 && !sim::is_searched(sim::find_schedule_family(choice.name));
}


constexpr const char* kZeroDominated = "no sharding (ZeRO-1 is as fast and lighter)";
constexpr const char* kZeroPipelinedDominated =
    "ZeRO-2/3 on p > 1 (synced once per step: ZeRO-1's time, the reduced gradients' shard more memory)";
constexpr const char* kZeroWithoutSchedule = "ZeRO-2/3 on p > 1 with a schedule PyTorch's pipelining lacks";
constexpr const char* kWeightsOverCap = "out of memory: the weights and their state alone";
constexpr const char* kZeroWithoutReplicas =
    "--zero without data or context parallel replicas (d x c = 1), or ZeRO-2/3 with experts folded apart";

TabledLayers tabulate(const PlanRequest& request, const models::TrainingShape& shape) {
  if (!request.profile) {
    // Each distinct layer costed and timed once.
    const models::LayerKinds kinds = models::expand_layer_kinds(request.model, shape);
    return {step::LayerTable(kinds, request.hardware, shape), kinds.transformer_layers(),
            models::model_flops_per_microbatch(kinds, shape)};
  }
  models::ModelLayers layers = models::expand_layers(request.model, shape);
  const step::ProfiledCosts profiled =
      step::apply_profile(*request.profile, request.model.name, shape, request.hardware, layers);
  return {step::LayerTable(layers, profiled.times), layers.transformer_layers(),
          models::model_flops_per_microbatch(layers, shape)};
}

// Why a schedule choice cannot run the model on `pp` ranks, or null: every
// stage (p x v of them) needs a transformer block, and a user's split fixes
// the stage count.
const char* stage_count_rejection(const PlanRequest& request, const ScheduleChoice& choice, int pp) {
  const int stages = pp * choice.virtual_stages;
  if (stages > request.model.layers) return "more pipeline stages than layers";
  // One rank has no bubble for more chunks to fill; they only add passes:
  // searched only when asked for in full (--pp 1 with the chunks' schedule
  // or count).
  const bool asked = request.pp == 1 && (request.schedule || request.virtual_stages);
  if (choice.virtual_stages > 1 && pp == 1 && !asked) return "several chunks on one rank";
  const bool fits_split = request.layer_counts ? static_cast<int>(request.layer_counts->size()) == stages
                                               : !request.layout || step::layout_stage_count(*request.layout) == stages;
  return fits_split ? nullptr : "stage count differs from the given split";
}


}  // namespace

struct CandidateEvaluator::ScheduleSlot {
  explicit ScheduleSlot(ScheduleContext outline_) : outline(std::move(outline_)) {}
  ScheduleContext outline;
  std::once_flag generated;
  std::shared_ptr<const ScheduleContext> context;  // null when its preconditions fail
};

CandidateEvaluator::CandidateEvaluator(const PlanRequest& request, const std::vector<SearchGroup>& groups,
                                       double memory_cap_bytes)
    : request_(request), groups_(groups), cap_(memory_cap_bytes), schedules_(schedule_choices(request)),
      recomputes_(recompute_choices(request)), layers_(groups.size()) {
  for (const ScheduleChoice& choice : schedules_) families_.push_back(&sim::find_schedule_family(choice.name));
  for (const SearchGroup& group : groups) {
    if (stage_counts_.count(group.pp) > 0) continue;
    StageCountChoices& choices = stage_counts_[group.pp];
    for (std::size_t choice = 0; choice < schedules_.size(); ++choice) {
      if (const char* reason = stage_count_rejection(request, schedules_[choice], group.pp)) {
        ++choices.rejected[reason];
      } else {
        choices.usable.push_back(choice);
      }
    }
  }
  // Groups that differ only in t or b share (p, m): each schedule once,
  // outlined now and generated when a candidate first needs it.
  for (const SearchGroup& group : groups) {
    for (std::size_t choice : stage_counts_.at(group.pp).usable) {
      auto& slot = schedule_cache_[std::make_tuple(choice, group.pp, group.microbatches)];
      if (slot) continue;
      slot = std::make_unique<ScheduleSlot>(
          schedule_outline(schedules_[choice], group.pp, group.microbatches, request_.runtime.moe_a2a_overlap));
    }
  }
}

CandidateEvaluator::~CandidateEvaluator() = default;

const CandidateEvaluator::ScheduleSlot& CandidateEvaluator::slot_of(std::size_t choice,
                                                                    const SearchGroup& group) const {
  return *schedule_cache_.at(std::make_tuple(choice, group.pp, group.microbatches));
}

const ScheduleContext* CandidateEvaluator::schedule_of(std::size_t choice, const SearchGroup& group) const {
  ScheduleSlot& slot = *schedule_cache_.at(std::make_tuple(choice, group.pp, group.microbatches));
  std::call_once(slot.generated, [&] {
    std::optional<ScheduleContext> context =
        schedule_context(schedules_[choice], group.pp, group.microbatches, request_.runtime.moe_a2a_overlap);
    if (context) slot.context = std::make_shared<const ScheduleContext>(std::move(*context));
  });
  return slot.context.get();
}

void CandidateEvaluator::enumerate_group(std::size_t index, std::vector<PendingCandidate>& pending, SearchTally& tally,
                                         bool weights_check) {
  const SearchGroup& group = groups_[index];
  // Every (sharding, recomputation) pair is a candidate per schedule; the
  // pairs that cannot run on p ranks are counted, not built.
  const std::vector<models::ZeroStage> zeros = zero_choices(request_, group);
  if (zeros.empty()) {
    tally.rejected[kZeroWithoutReplicas] += recomputes_.size() * stage_counts_.at(group.pp).usable.size();
    return;
  }
  if (weights_check && weights_over_cap(group, zeros)) {
    tally.deferred = true;
    tally.rejected[kWeightsOverCap] += zeros.size() * recomputes_.size() * stage_counts_.at(group.pp).usable.size();
    return;
  }
  for (models::ZeroStage zero : zeros) {
    const std::size_t first = layers_[index].size();
    for (const RecomputeChoice& recompute : recomputes_) {
      if (recompute.per_stage) {
        // No recomputation's context (listed first, its table shared), with
        // the selective stages' modules and the settings of this sharding.
        LayerContext context = layers_[index][first];
        context.shape.recompute_modules = recompute.modules;
        for (std::size_t r = 0; r < recomputes_.size(); ++r) {
          if (!recomputes_[r].per_stage) context.stage_variants.push_back(first + r);
        }
        layers_[index].push_back(std::move(context));
        continue;
      }
      const models::TrainingShape shape = group_shape(request_, group, zero, recompute);
      layers_[index].push_back(
          {shape, tabled_layers(shape), models::state_bytes(shape).total(), models::expert_state_bytes(shape).total()});
    }
  }
  const std::vector<LayerContext>& contexts = layers_[index];
  const StageCountChoices& choices = stage_counts_.at(group.pp);
  for (const auto& [reason, count] : choices.rejected) tally.rejected[reason] += count * zeros.size() * recomputes_.size();
  std::size_t out_of_memory = 0, per_stage_with_chunks = 0;
  std::map<const char*, std::size_t> not_run;  // by the framework the search keeps to, by reason
  // A sharding ZeRO-1 dominates is tried only for the frameworks without it.
  const step::FrameworkSet without_zero1 = frameworks_without_zero1(group);
  const double tokens = step_tokens(group, request_.seq_len);
  const bool searched_split = !request_.layer_counts && !request_.layout;
  for (std::size_t choice : choices.usable) {
    const ScheduleContext& outline = slot_of(choice, group).outline;
    for (std::size_t l = 0; l < contexts.size(); ++l) {
      const LayerContext& layers = contexts[l];
      const sim::ScheduleFamily& family = *families_[choice];
      if (!step::zero_runs_with(layers.shape.zero, group.pp, family)) {
        ++tally.rejected[kZeroWithoutSchedule];
        continue;
      }
      if (!layers.stage_variants.empty() && !splits_per_stage(schedules_[choice])) {
        ++per_stage_with_chunks;
        continue;
      }
      // Who runs it: a searched split is expressed by every framework that
      // runs the rest (Megatron's layout string, PyTorch's module lists)
      // but those that split the model themselves, which run a candidate
      // of their own on their split.
      PlanCandidate layout = describe_candidate(group, layers.shape, schedules_[choice]);
      if (!layers.stage_variants.empty()) layout.stage_recompute.assign(1, models::Recompute::kFull);
      const bool framework_only = dominated_sharding(request_, group, layers.shape.zero);
      const step::FrameworkSet frameworks =
          step::frameworks_running(layout, family, request_.seq_len) &
          (framework_only ? without_zero1 : step::kEveryFramework) &
          ~refusing_given_split(request_, layers.blocks(), outline.schedule.stages);
      if (framework_only && frameworks == 0) {
        ++tally.rejected[layers.shape.zero == models::ZeroStage::kNone ? kZeroDominated : kZeroPipelinedDominated];
        continue;
      }
      const bool kept_to_one = request_.framework != step::Framework::kAny;
      const step::FrameworkSet kept = kept_to_one ? step::framework_bit(request_.framework) : step::kEveryFramework;
      const step::FrameworkSet own_split = searched_split && group.pp > 1 && layers.stage_variants.empty()
                                               ? frameworks & step::kSplitsItself & kept
                                               : 0;
      if (kept_to_one && (frameworks & step::framework_bit(request_.framework)) == 0) {
        const char* reason = step::framework_refusal(request_.framework, layout, request_.seq_len);
        ++not_run[reason != nullptr ? reason : "a split other than its own"];
        continue;
      }
      // The outline's memory floor is no higher than the schedule's: over
      // the cap, no split fits.
      if (!split_fits(index, layers, outline)) {
        ++out_of_memory;
        tally.unfitted.push_back({index, l, choice});
        continue;
      }
      PendingCandidate candidate{index, l, choice, false, std::nullopt, {}, 0};
      candidate.frameworks = frameworks;
      if (own_split != 0) {
        // On the framework's own split; under any framework, only for
        // that framework's best (the searched split is the top's).
        PendingCandidate own = candidate;
        own.framework_split = true;
        own.framework_only = framework_only || !kept_to_one;
        own.bounds = split_bounds(index, layers, outline, false);
        own.tokens_bound = tokens / own.bounds.iteration_time_s;
        pending.push_back(std::move(own));
        if (kept_to_one) continue;
        candidate.frameworks &= ~own_split;
        if (framework_only && candidate.frameworks == 0) continue;
      }
      candidate.bounds = split_bounds(index, layers, outline, searched_split);
      candidate.tokens_bound = tokens / candidate.bounds.iteration_time_s;
      candidate.framework_only = framework_only;
      pending.push_back(std::move(candidate));
    }
  }
  if (out_of_memory > 0) tally.rejected[kOutOfMemory] += out_of_memory;
  if (per_stage_with_chunks > 0) tally.rejected[kPerStageWithChunks] += per_stage_with_chunks;
  for (const auto& [reason, count] : not_run) {
    tally.rejected[fmt::format("not run by {}: {}", step::framework_info(request_.framework).name, reason)] += count;
  }
  const std::size_t usable = choices.usable.size();
  if (group.dp * group.cp > 1 && !request_.zero && usable > 0) {
    const auto tried = [&](models::ZeroStage zero) { return std::find(zeros.begin(), zeros.end(), zero) != zeros.end(); };
    if (!tried(models::ZeroStage::kNone)) tally.rejected[kZeroDominated] += recomputes_.size() * usable;
    if (group.pp > 1 && !request_.profile) {
      const std::size_t left_out = !tried(models::ZeroStage::kGradients) + !tried(models::ZeroStage::kWeights);
      if (left_out > 0) tally.rejected[kZeroPipelinedDominated] += left_out * recomputes_.size() * usable;
    }
  }
}

const char* CandidateEvaluator::schedule(PendingCandidate& pending, bool& unfitted) const {
  unfitted = false;
  const SearchGroup& group = groups_[pending.group];
  const ScheduleContext* context = schedule_of(pending.schedule, group);
  if (context == nullptr) return kNoSchedule;
  const LayerContext& layers = layers_[pending.group][pending.layers];
  if (context->choice.recompute_in_bubbles && layers.shape.recompute == models::Recompute::kNone &&
      layers.stage_variants.empty()) {
    return kNothingToRecompute;
  }
  if (!split_fits(pending.group, layers, *context)) {
    unfitted = true;
    return kOutOfMemory;
  }
  // Where the fastest split without recomputation fits the cap, no
  // per-stage choice is faster (no setting is faster on any run): the
  // uniform candidate serves.
  if (!layers.stage_variants.empty()) {
    const std::size_t none = layers.stage_variants.front();
    const std::optional<step::StageSplit> fastest = fastest_split(pending.group, none, context->schedule.stages);
    if (fastest && stage_memory_max(layers_[pending.group][none], *context, *fastest) <= cap_) return kPerStageNoneFits;
  }
  const bool searched_split = !request_.layer_counts && !request_.layout && !pending.framework_split;
  pending.bounds = split_bounds(pending.group, layers, *context, searched_split);
  pending.tokens_bound = step_tokens(group, request_.seq_len) / pending.bounds.iteration_time_s;
  pending.scheduled = true;
  return nullptr;
}

std::shared_ptr<const TabledLayers> CandidateEvaluator::tabled_layers(const models::TrainingShape& shape) const {
  // A rank's layers cost the same at any p and d but through ZeRO-2/3's
  // per-micro-batch collectives (one pipeline rank), which go over d x c.
  const bool per_microbatch_shards = shape.zero >= models::ZeroStage::kGradients && !shape.pipelined;
  const TableKey key{shape.micro_batch_size,
                     shape.tp,
                     shape.cp,
                     shape.ep,
                     shape.etp,
                     static_cast<int>(shape.recompute),
                     static_cast<int>(shape.recompute_modules),
                     static_cast<int>(shape.zero),
                     shape.pipelined ? 1 : 0,
                     per_microbatch_shards ? shape.dp : 0};
  {
    const std::lock_guard<std::mutex> lock(tables_mutex_);
    if (const auto found = tables_.find(key); found != tables_.end()) return found->second;
  }
  auto tabled = std::make_shared<const TabledLayers>(tabulate(request_, shape));
  const std::lock_guard<std::mutex> lock(tables_mutex_);
  return tables_.emplace(key, std::move(tabled)).first->second;
}

bool CandidateEvaluator::weights_over_cap(const SearchGroup& group, const std::vector<models::ZeroStage>& zeros) const {
  // As some_split_fits: only the memory partitioner refuses what no split fits
  // (the others' candidates are replayed, fitting or not); measured passes
  // are tabled at their own micro-batch only.
  const bool refuses =
      request_.partition == step::PartitionMethod::kMemory && !request_.layer_counts && !request_.layout;
  if (!refuses || request_.profile) return false;
  double least = std::numeric_limits<double>::infinity();
  for (models::ZeroStage zero : zeros) {
    const models::TrainingShape shape = group_shape(request_, group, zero, RecomputeChoice{});
    // The weights of this t, ep and etp: tabled once for every b and c.
    models::TrainingShape weights = shape;
    weights.micro_batch_size = 1;
    weights.dp = shape.dp * shape.cp;
    weights.cp = 1;
    weights.zero = models::ZeroStage::kNone;
    const LayerContext context{shape, tabled_layers(weights), models::state_bytes(shape).total(),
                               models::expert_state_bytes(shape).total()};
    const int n = context.table().size();
    // rank_memory_floor without the activations.
    least = std::min(least, (context.state_bytes(0, n) + context.table().fp8_weight_copy_bytes(0, n)) / group.pp);
  }
  return least > cap_;
}

std::optional<PendingCandidate> CandidateEvaluator::closest_to_fitting(
    const std::vector<UnfittedCandidate>& unfitted) const {
  std::optional<PendingCandidate> closest;
  double lowest = 0;
  for (const UnfittedCandidate& candidate : unfitted) {
    const LayerContext& layers = layers_[candidate.group][candidate.layers];
    // Per stage, nothing fits where full recomputation (among the others) does not.
    if (!layers.stage_variants.empty()) continue;
    const ScheduleContext* context = schedule_of(candidate.schedule, groups_[candidate.group]);
    if (context == nullptr) continue;  // its schedule's preconditions fail
    // A searched order has no split before its costs: none to offer.
    if (sim::is_searched(sim::find_schedule_family(schedules_[candidate.schedule].name))) continue;
    std::optional<step::StageSplit> leanest = leanest_split(layers, *context);
    if (!leanest) continue;
    const double estimate = stage_memory_max(layers, *context, *leanest);
    if (closest && estimate >= lowest) continue;
    closest = PendingCandidate{candidate.group, candidate.layers, candidate.schedule, true, std::move(*leanest), {}, 0};
    lowest = estimate;
  }
  return closest;
}

PlanCandidate CandidateEvaluator::replay(const PendingCandidate& pending) const {
  bool redundant = false;
  return replay(pending, redundant);
}

PlanCandidate CandidateEvaluator::replay(const PendingCandidate& pending, bool& redundant) const {
  redundant = false;
  const SearchGroup& group = groups_[pending.group];
  const LayerContext& layers = layers_[pending.group][pending.layers];
  const ScheduleContext& context = *schedule_of(pending.schedule, group);
  // Generated schedules validate (the property tests); the replay's figures
  // are the engine's (simulate() takes the engine when a link queues).
  sim::SimulationOptions options;
  options.validate = false;
  options.compute_critical_path = false;
  step::PipelineSetup setup;
  setup.shape = layers.shape;
  setup.pp = group.pp;
  setup.virtual_stages = context.choice.virtual_stages;
  setup.microbatches = group.microbatches;
  setup.schedule = context.choice.name;
  setup.profile = request_.profile ? &*request_.profile : nullptr;
  setup.memory_cap_bytes = static_cast<std::int64_t>(cap_);
  setup.recompute_in_bubbles = context.choice.recompute_in_bubbles;
  const bool searched = sim::is_searched(sim::find_schedule_family(context.choice.name));
  sim::Schedule schedule =
      searched
          ? sim::searched_schedule_shape(context.choice.name, group.pp, group.microbatches)
          : step::run_schedule(context.choice.name, {group.pp, group.microbatches, context.choice.virtual_stages, 0},
                               layers.shape.runtime.moe_a2a_overlap);
  std::vector<const step::LayerTable*> tables(static_cast<std::size_t>(schedule.stages), &layers.table());
  std::vector<models::Recompute> stage_recompute;
  if (pending.stage_settings > 0) {
    std::vector<std::size_t> settings;
    {
      const std::lock_guard<std::mutex> lock(stage_settings_mutex_);
      settings = stage_settings_[pending.stage_settings - 1];
    }
    const RecomputeVariants variants = variants_of(pending.group, layers);
    tables = stage_tables(variants, settings);
    for (std::size_t setting : settings) stage_recompute.push_back(variants[setting]->shape.recompute);
  }
  const step::ModelStageCosts costs = step::build_stage_costs(tables, layers.shape, *pending.split, schedule);
  // Searched within what the cap leaves (and the choice's limit), as
  // `simulate --plan` searches it.
  if (searched) {
    const std::optional<sim::ActivationLimit>& limit = context.choice.activation_limit;
    if (limit && step::limit_redundant(*limit, setup.memory_cap_bytes, costs.costs)) {
      redundant = true;
      return {};
    }
    schedule =
        step::search_order(context.choice.name, costs.costs, step::setup_topology(request_.hardware, setup),
                           setup.microbatches, limit, setup.memory_cap_bytes, "the memory cap", "the plan's limit")
            .schedule;
  }
  const step::ModelSimulation simulation = step::simulate_stage_costs(
      schedule, costs, *pending.split, request_.hardware, setup, layers.model_flops(), options);
  PlanCandidate candidate = describe_candidate(group, layers.shape, context.choice);
  take_figures(simulation, candidate);
  if (request_.objective == Objective::kGoodput) add_goodput(simulation, request_, candidate);
  candidate.stage_recompute = std::move(stage_recompute);
  candidate.frameworks = pending.frameworks;
  return candidate;
}

}  // namespace pipeplan::planner
