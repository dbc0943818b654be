#include "planner/candidate_evaluator.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "models/layers.h"
#include "models/training_state.h"
#include "planner/layer_table.h"
#include "planner/memory_profile.h"
#include "planner/min_max_dp.h"
#include "planner/model_simulation.h"
#include "planner/profile_costs.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {

// What all candidates of a group and recomputation share.
struct LayerContext {
  models::TrainingShape shape;
  models::ModelLayers layers;
  LayerTable table;
  double model_flops;
  double state_bytes_per_param;
};

// A generated schedule and, per rank, its (M_B, M_W) multiplicities at each
// memory peak candidate (one chunk per rank only).
struct ScheduleContext {
  const ScheduleChoice& choice;
  sim::Schedule schedule;
  std::vector<std::vector<std::pair<int, int>>> peak_points;
};

namespace {

constexpr const char* kOutOfMemory = "out of memory";

std::vector<LayerContext> layer_contexts(const PlanRequest& request, const SearchGroup& group,
                                         const std::vector<models::Recompute>& recomputes) {
  std::vector<LayerContext> contexts;
  for (models::Recompute recompute : recomputes) {
    models::TrainingShape shape;
    shape.micro_batch_size = group.micro_batch_size;
    shape.seq_len = request.seq_len;
    shape.tp = group.tp;
    shape.dp = group.dp;
    // Megatron's advice: sequence parallelism with tensor parallelism, the
    // distributed optimizer with data parallelism.
    shape.sequence_parallel = request.sequence_parallel.value_or(group.tp > 1) && group.tp > 1;
    shape.recompute = recompute;
    shape.zero = group.dp > 1 ? request.zero.value_or(models::ZeroStage::kOptimizer) : models::ZeroStage::kNone;
    models::ModelLayers layers = models::expand_layers(request.model, shape);
    std::optional<ProfiledCosts> profiled;
    if (request.profile) profiled = apply_profile(*request.profile, request.model.name, shape, layers);
    LayerTable table = profiled ? LayerTable(layers, profiled->times) : LayerTable(layers, request.hardware, shape);
    const double flops = models::model_flops_per_microbatch(layers, shape);
    const double state = models::state_bytes_per_param(shape.zero, shape.dp).total();
    contexts.push_back({shape, std::move(layers), std::move(table), flops, state});
  }
  return contexts;
}

std::optional<ScheduleContext> schedule_context(const ScheduleChoice& choice, const SearchGroup& group,
                                                SearchTally& tally) {
  ScheduleContext context{choice, {}, {}};
  try {
    context.schedule = sim::generate_schedule(choice.name, {group.pp, group.microbatches, choice.virtual_stages, 0});
  } catch (const InputError&) {
    ++tally.rejected["schedule precondition (micro-batches, chunks)"];
    return std::nullopt;
  }
  if (context.schedule.virtual_stages() == 1) {
    for (const RankMemoryProfile& profile : memory_profiles(context.schedule)) {
      std::vector<std::pair<int, int>> points;
      for (const MemoryPoint& point : profile.points) points.emplace_back(point.full[0], point.partial[0]);
      context.peak_points.push_back(std::move(points));
    }
  }
  return context;
}

// Time-balanced splits depend only on the layers and the stage count, which
// several schedules share (ZBV, DualPipeV and Interleaved1F1B with v = 2).
using TimeSplitCache = std::map<std::pair<const LayerContext*, int>, std::optional<StageSplit>>;

std::optional<StageSplit> time_split(const LayerContext& layers, int stages, TimeSplitCache& cache) {
  const auto key = std::make_pair(&layers, stages);
  const auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  const LayerTable& table = layers.table;
  std::optional<StageSplit> split = min_max_split(
      table.size(), stages, [&](int, int i, int j) { return table.time_s(i, j); }, [](int, int, int) { return true; });
  cache.emplace(key, split);
  return split;
}

// The largest stage memory (weights, state, buffers and the activations at
// the stage's peaks) of layers [i, j) on `stage`; exact for one chunk per rank.
double stage_memory(const LayerContext& layers, const ScheduleContext& context, int stage, int i, int j) {
  const LayerTable& table = layers.table;
  const double full = table.activation_bytes(i, j), partial = table.weight_grad_bytes(i, j);
  double activations = 0;
  for (const auto& [a, w] : context.peak_points[static_cast<std::size_t>(stage)]) {
    activations = std::max(activations, a * full + w * partial);
  }
  return table.params(i, j) * layers.state_bytes_per_param + 2 * table.boundary_bytes(j) + table.working_bytes(i, j) +
         activations;
}

double stage_memory_max(const LayerContext& layers, const ScheduleContext& context, const StageSplit& split) {
  double worst = 0;
  for (int stage = 0; stage < split.stages(); ++stage) {
    worst = std::max(worst, stage_memory(layers, context, stage, split.first_layer(stage), split.end_layer(stage)));
  }
  return worst;
}

// The split that makes the largest stage memory smallest, whatever the
// time (one chunk per rank; none otherwise).
std::optional<StageSplit> leanest_split(const LayerContext& layers, const ScheduleContext& context) {
  if (context.peak_points.empty()) return std::nullopt;
  return min_max_split(
      layers.table.size(), context.schedule.stages,
      [&](int stage, int i, int j) { return stage_memory(layers, context, stage, i, j); },
      [](int, int, int) { return true; });
}

std::optional<StageSplit> choose_split(const LayerContext& layers, const ScheduleContext& context,
                                       const PlanRequest& request, double cap, TimeSplitCache& cache) {
  const LayerTable& table = layers.table;
  const int n = table.size();
  const int stages = context.schedule.stages;
  auto time = [&](int i, int j) { return table.time_s(i, j); };
  const int blocks = layers.layers.transformer_layers();
  if (request.layer_counts) return split_from_counts(*request.layer_counts, blocks);
  if (request.layout) return split_from_layout(*request.layout, blocks, stages);
  switch (request.partition) {
    case PartitionMethod::kUniform: return uniform_split(blocks, stages);
    case PartitionMethod::kParameters:
      return min_max_split(n, stages, [&](int, int i, int j) { return table.params(i, j); },
                           [](int, int, int) { return true; });
    case PartitionMethod::kTime: break;
    case PartitionMethod::kMemory:
      // Exact per-position memory needs one stage per rank; with more, the
      // split balances time and the replay checks memory.
      if (context.peak_points.empty()) break;
      // The lowest peak is the objective: the leanest split, if it fits.
      if (request.objective == Objective::kMemory) {
        std::optional<StageSplit> leanest = leanest_split(layers, context);
        if (leanest && stage_memory_max(layers, context, *leanest) > cap) return std::nullopt;
        return leanest;
      }
      return memory_aware_split(
          n, stages, time, [&](int stage, int i, int j) { return stage_memory(layers, context, stage, i, j); }, cap,
          request.balance_slack);
  }
  return time_split(layers, stages, cache);
}

// A user's split fixes the stage count (p x v).
bool fits_given_split(const PlanRequest& request, int stages) {
  if (request.layer_counts) return static_cast<int>(request.layer_counts->size()) == stages;
  return !request.layout || layout_stage_count(*request.layout) == stages;
}

PlanCandidate describe(const SearchGroup& group, const LayerContext& layers, const ScheduleChoice& choice,
                       const ModelSimulation& simulation) {
  PlanCandidate candidate;
  candidate.tp = group.tp;
  candidate.pp = group.pp;
  candidate.dp = group.dp;
  candidate.micro_batch_size = group.micro_batch_size;
  candidate.microbatches = group.microbatches;
  candidate.virtual_stages = choice.virtual_stages;
  candidate.schedule = choice.name;
  candidate.recompute = layers.shape.recompute;
  candidate.sequence_parallel = layers.shape.sequence_parallel;
  candidate.zero = layers.shape.zero;
  take_figures(simulation, candidate);
  return candidate;
}

}  // namespace

CandidateEvaluator::CandidateEvaluator(const PlanRequest& request, double memory_cap_bytes)
    : request_(request), cap_(memory_cap_bytes), schedules_(schedule_choices(request)),
      recomputes_(recompute_choices(request)) {}

PlanCandidate CandidateEvaluator::simulate_candidate(const SearchGroup& group, const LayerContext& layers,
                                                    const ScheduleContext& context, const StageSplit& split) const {
  sim::SimulationOptions options;
  options.validate = false;  // generated schedules validate (the property tests)
  options.compute_critical_path = false;
  options.uncontended_links = true;
  PipelineSetup setup;
  setup.shape = layers.shape;
  setup.pp = group.pp;
  setup.virtual_stages = context.choice.virtual_stages;
  setup.microbatches = group.microbatches;
  setup.schedule = context.choice.name;
  setup.profile = request_.profile ? &*request_.profile : nullptr;
  const ModelStageCosts costs = build_stage_costs(layers.table, layers.shape, split, context.schedule);
  const ModelSimulation simulation =
      simulate_stage_costs(context.schedule, costs, split, request_.hardware, setup, layers.model_flops, options);
  return describe(group, layers, context.choice, simulation);
}

void CandidateEvaluator::evaluate_group(const SearchGroup& group, std::vector<PlanCandidate>& feasible,
                                        SearchTally& tally) const {
  const std::vector<LayerContext> contexts = layer_contexts(request_, group, recomputes_);
  TimeSplitCache time_splits;
  auto note_peak = [&](const PlanCandidate& candidate) {
    if (!tally.lowest_peak || candidate.max_peak_bytes < tally.lowest_peak->max_peak_bytes) {
      tally.lowest_peak = candidate;
    }
  };
  for (const ScheduleChoice& choice : schedules_) {
    const std::optional<ScheduleContext> context = schedule_context(choice, group, tally);
    if (!context) continue;
    for (const LayerContext& layers : contexts) {
      if (context->schedule.stages > layers.layers.transformer_layers()) {
        ++tally.rejected["more pipeline stages than layers"];
        continue;
      }
      if (!fits_given_split(request_, context->schedule.stages)) {
        ++tally.rejected["stage count differs from the given split"];
        continue;
      }
      const std::optional<StageSplit> split = choose_split(layers, *context, request_, cap_, time_splits);
      if (!split) {
        ++tally.rejected[kOutOfMemory];
        // How close it comes: its leanest split, costed when it could be the
        // lowest peak so far.
        const std::optional<StageSplit> leanest = leanest_split(layers, *context);
        if (leanest && (!tally.lowest_peak || stage_memory_max(layers, *context, *leanest) <
                                                  static_cast<double>(tally.lowest_peak->max_peak_bytes))) {
          note_peak(simulate_candidate(group, layers, *context, *leanest));
        }
        continue;
      }
      PlanCandidate candidate = simulate_candidate(group, layers, *context, *split);
      ++tally.evaluated;
      note_peak(candidate);
      if (static_cast<double>(candidate.max_peak_bytes) > cap_) {
        ++tally.rejected[kOutOfMemory];
        continue;
      }
      feasible.push_back(std::move(candidate));
    }
  }
}

}  // namespace pipeplan::planner
