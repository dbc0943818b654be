#include "planner/mixed/mixed_candidates.h"

#include <algorithm>
#include <limits>

#include "models/layers.h"
#include "models/training_state.h"
#include "planner/report/plan_replay.h"
#include "planner/search/candidate_bounds.h"
#include "planner/search/schedule_context.h"
#include "sim/generators/registry.h"
#include "sim/memory_fit.h"
#include "step/min_max_dp.h"
#include "step/partitioner.h"

namespace pipeplan::planner {
namespace {

// Layer [i, i + 1) on a stage: its kernels (a whole-batch schedule's
// micro-batch carries `scale`) and its own overheads, without the pass's.
double layer_work_s(const step::LayerTable& table, int layer, double scale) {
  const double overheads = table.stage_time_s(layer, layer + 1) - table.time_s(layer, layer + 1);
  return table.time_s(layer, layer + 1) * scale + overheads - 2 * table.pass_overhead_s();
}

// Whatever the split and the order, each rank runs each of its stages'
// passes once per micro-batch, with their pass overheads. Spread as a fluid
// over the ranks, each segment's ranks at their kind's cheapest block (the
// embedding and output layer counted as the fewest blocks they are worth
// on any kind), the busiest rank's work is no less than the x at which the
// ranks' shares add up to the model.
double fluid_bound_s(const MixedLayout& layout, const ScheduleContext& outline) {
  struct Rate {
    int ranks;
    double per_block, fixed;
  };
  const double runs = outline.schedule.microbatches, scale = outline.schedule.microbatch_scale;
  const step::LayerTable& first = layout.segment_layers.front()->table();
  const int n = first.size();
  double blocks = layout.segment_layers.front()->blocks();
  double edges[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  std::vector<Rate> rates;
  double high = 0;
  for (std::size_t segment = 0; segment < layout.segment_layers.size(); ++segment) {
    const step::LayerTable& table = layout.segment_layers[segment]->table();
    double cheapest = std::numeric_limits<double>::infinity();
    for (int block : table.distinct_blocks()) cheapest = std::min(cheapest, layer_work_s(table, block, scale));
    edges[0] = std::min(edges[0], layer_work_s(table, 0, scale) / cheapest);
    edges[1] = std::min(edges[1], layer_work_s(table, n - 1, scale) / cheapest);
    const double fixed = runs * 2 * table.pass_overhead_s() * outline.choice.virtual_stages;
    rates.push_back({layout.pipeline.segments[segment].stages, runs * cheapest, fixed});
  }
  blocks += edges[0] + edges[1];
  for (const Rate& rate : rates) high = std::max(high, rate.fixed + blocks * rate.per_block);
  // Blocks the ranks take within x grow with x: bisect for the model's.
  const auto taken = [&](double x) {
    double sum = 0;
    for (const Rate& rate : rates) sum += rate.ranks * std::max(0.0, (x - rate.fixed) / rate.per_block);
    return sum;
  };
  double low = 0;
  for (int step = 0; step < 64; ++step) {
    const double mid = (low + high) / 2;
    (taken(mid) >= blocks ? high : low) = mid;
  }
  // Lowered a little: the replay sums in its own order.
  return low * (1 - 1e-9);
}

}  // namespace

MixedCandidates::MixedCandidates(const PlanRequest& request, const std::vector<KindPool>& pools,
                                 const std::vector<models::NetworkTier>& tiers, MixedSearchResult& result)
    : request_(request), pools_(pools), tiers_(tiers), result_(result), schedules_(schedule_choices(request)),
      recomputes_(recompute_choices(request)) {
  for (const ScheduleChoice& choice : schedules_) {
    generated_.push_back(!sim::is_searched(sim::find_schedule_family(choice.name)) && !choice.recompute_in_bubbles);
  }
  for (const KindPool& pool : pools_) {
    PlanRequest alone = request_;
    alone.hardware = pool.hardware;
    alone.gpus = pool.gpus();
    std::map<std::string, std::size_t> elsewhere;  // the kind's own search counts them
    tps_.push_back(tp_choices(alone, elsewhere));
  }
}

MixedCandidates::~MixedCandidates() = default;

std::vector<MixedPending> MixedCandidates::layouts() {
  std::vector<std::size_t> order;
  std::vector<bool> used(pools_.size(), false);
  orders(order, used);
  std::vector<MixedPending> entries;
  for (std::size_t layout = 0; layout < layouts_.size(); ++layout) {
    // The least any choice gives: one chunk per rank, every micro-batch apart.
    const ScheduleChoice plain{"1F1B", 1, std::nullopt, false};
    const MixedLayout& shape = layouts_[layout];
    const ScheduleContext outline = schedule_outline(plain, shape.pipeline.pp(), shape.microbatches, false);
    MixedPending entry{layout, std::nullopt, fluid_bound_s(shape, outline), false, std::nullopt, nullptr};
    // Every schedule holds at least one micro-batch on each rank at its peak (the outline's).
    if (!memory_may_fit(shape, outline)) {
      result_.rejected["out of memory"] += choices_in(entry);
      continue;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// Every ordered choice of two or more kinds.
void MixedCandidates::orders(std::vector<std::size_t>& order, std::vector<bool>& used) {
  if (order.size() >= 2) {
    for (int d = 1; d <= request_.global_batch; ++d) {
      if (request_.global_batch % d != 0 || (request_.dp && *request_.dp != d)) continue;
      MixedPipeline pipeline;
      segments(order, d, pipeline);
    }
  }
  for (std::size_t pool = 0; pool < pools_.size(); ++pool) {
    if (used[pool]) continue;
    used[pool] = true;
    order.push_back(pool);
    orders(order, used);
    order.pop_back();
    used[pool] = false;
  }
}

// Each kind's t (its stages then fill its GPUs), one kind at a time.
void MixedCandidates::segments(const std::vector<std::size_t>& order, int d, MixedPipeline& pipeline) {
  if (pipeline.segments.size() == order.size()) {
    if (request_.pp && pipeline.pp() != *request_.pp) return;
    // Every stage holds a transformer block.
    if (pipeline.pp() > request_.model.layers) {
      ++result_.rejected["more pipeline stages than layers"];
      return;
    }
    const int replica_batch = request_.global_batch / d;
    for (int b = 1; b <= replica_batch; ++b) {
      if (replica_batch % b != 0 || (request_.micro_batch_size && *request_.micro_batch_size != b)) continue;
      for (const RecomputeChoice& recompute : recomputes_) {
        if (!recompute.per_stage) add(pipeline, d, b, recompute);
      }
    }
    return;
  }
  const std::size_t pool = order[pipeline.segments.size()];
  for (int t : tps_[pool]) {
    const int gpus = pools_[pool].gpus();
    if (gpus % (t * d) != 0) continue;
    pipeline.segments.push_back({pool, gpus / (t * d), t});
    segments(order, d, pipeline);
    pipeline.segments.pop_back();
  }
}

void MixedCandidates::add(const MixedPipeline& pipeline, int d, int b, const RecomputeChoice& recompute) {
  const models::ZeroStage zero =
      request_.zero.value_or(d > 1 ? models::ZeroStage::kOptimizer : models::ZeroStage::kNone);
  if ((zero != models::ZeroStage::kNone && d == 1) || zero >= models::ZeroStage::kGradients) {
    ++result_.rejected["ZeRO-2/3 on p > 1, or sharding without replicas"];
    return;
  }
  SearchGroup group;
  group.pp = pipeline.pp();
  group.dp = d;
  group.micro_batch_size = b;
  group.microbatches = request_.global_batch / d / b;
  // The common shape (t 1): sequence parallelism wherever a segment has t > 1 (segment_shape).
  models::TrainingShape shape = group_shape(request_, group, zero, recompute);
  shape.sequence_parallel = request_.sequence_parallel.value_or(true);
  // Flags that apply with t > 1 as asked: segment_shape keeps them where its t allows.
  shape.runtime.tp_comm_overlap = request_.runtime.tp_comm_overlap && shape.sequence_parallel;
  MixedLayout layout{pipeline, d, b, group.microbatches, recompute, shape, {}};
  for (const KindSegment& segment : pipeline.segments) {
    layout.segment_layers.push_back(&layers_of(segment.pool, segment_shape(shape, segment)));
  }
  layouts_.push_back(std::move(layout));
}

bool MixedCandidates::runs(std::size_t choice, const MixedLayout& layout) const {
  const int stages = layout.pipeline.pp() * schedules_[choice].virtual_stages;
  return generated_[choice] && stages <= layout.segment_layers.front()->blocks() && fits_given_split(stages);
}

// A user's split (--layers, --layout) fixes the stage count.
bool MixedCandidates::fits_given_split(int stages) const {
  if (request_.layer_counts) return static_cast<int>(request_.layer_counts->size()) == stages;
  return !request_.layout || step::layout_stage_count(*request_.layout) == stages;
}

// One chunk per rank: each rank runs its one stage's passes once per
// micro-batch, so no split's replay beats the micro-batches times the
// slowest stage of the split that makes it least (the time split, stage
// s on rank s).
double MixedCandidates::one_chunk_bound_s(const MixedLayout& layout) const {
  const int stages = layout.pipeline.pp();
  std::vector<const step::LayerTable*> tables;
  for (int rank = 0; rank < stages; ++rank) {
    tables.push_back(&layout.segment_layers[layout.pipeline.segment_of(rank)]->table());
  }
  const std::optional<step::StageSplit> split = step::min_max_split(
      tables.front()->size(), stages,
      [&](int stage, int i, int j) { return tables[static_cast<std::size_t>(stage)]->stage_time_s(i, j); },
      [](int, int, int) { return true; });
  if (!split) return 0;
  double slowest = 0;
  for (int stage = 0; stage < stages; ++stage) {
    slowest = std::max(slowest, tables[static_cast<std::size_t>(stage)]->stage_time_s(split->first_layer(stage),
                                                                                       split->end_layer(stage)));
  }
  return layout.microbatches * slowest * (1 - 1e-9);
}

std::vector<MixedPending> MixedCandidates::candidates_of(const MixedPending& entry) {
  const MixedLayout& layout = layouts_[entry.layout];
  const double one_chunk = one_chunk_bound_s(layout);
  std::vector<MixedPending> candidates;
  for (std::size_t choice = 0; choice < schedules_.size(); ++choice) {
    if (!generated_[choice]) continue;
    if (!runs(choice, layout)) {
      const int stages = layout.pipeline.pp() * schedules_[choice].virtual_stages;
      ++result_.rejected[fits_given_split(stages) ? "more pipeline stages than layers"
                                                  : "stage count differs from the given split"];
      continue;
    }
    ++result_.candidates;
    const ScheduleContext outline =
        schedule_outline(schedules_[choice], layout.pipeline.pp(), layout.microbatches, false);
    double bound = std::max(entry.bound_s, fluid_bound_s(layout, outline));
    if (outline.schedule.stages == outline.schedule.ranks && outline.schedule.microbatch_scale == 1) {
      bound = std::max(bound, one_chunk);
    }
    candidates.push_back({entry.layout, choice, bound, false, std::nullopt, nullptr});
  }
  return candidates;
}

std::size_t MixedCandidates::choices_in(const MixedPending& entry) const {
  if (entry.schedule) return 1;
  std::size_t count = 0;
  for (std::size_t choice = 0; choice < schedules_.size(); ++choice) count += runs(choice, layouts_[entry.layout]) ? 1 : 0;
  return count;
}

const ScheduleContext* MixedCandidates::schedule_of(std::size_t choice, int pp, int microbatches) {
  const auto key = std::make_tuple(choice, pp, microbatches);
  auto found = schedule_cache_.find(key);
  if (found == schedule_cache_.end()) {
    std::optional<ScheduleContext> context = schedule_context(schedules_[choice], pp, microbatches, false);
    found = schedule_cache_.emplace(key, context ? std::make_unique<ScheduleContext>(std::move(*context)) : nullptr)
                .first;
  }
  return found->second.get();
}

// The layers of a segment's ranks: timed once per kind and per-rank shape
// (any d: ZeRO-1's shards change their state's bytes only).
const LayerContext& MixedCandidates::layers_of(std::size_t pool, const models::TrainingShape& shape) {
  const LayersKey key{pool, shape.tp, shape.dp, shape.micro_batch_size, static_cast<int>(shape.recompute),
                      static_cast<int>(shape.zero)};
  if (const auto found = layers_.find(key); found != layers_.end()) return found->second;
  LayersKey table_key = key;
  std::get<2>(table_key) = 0;
  auto tabled = tables_.find(table_key);
  if (tabled == tables_.end()) {
    const models::LayerKinds kinds = models::expand_layer_kinds(request_.model, shape);
    tabled = tables_
                 .emplace(table_key, std::make_shared<const TabledLayers>(TabledLayers{
                                         step::LayerTable(kinds, pools_[pool].hardware, shape),
                                         kinds.transformer_layers(), models::model_flops_per_microbatch(kinds, shape)}))
                 .first;
  }
  return layers_
      .emplace(key, LayerContext{shape, tabled->second, models::state_bytes(shape).total(),
                                 models::expert_state_bytes(shape).total()})
      .first->second;
}

double MixedCandidates::cap_of(std::size_t pool) const {
  return request_.memory_cap_bytes > 0 ? request_.memory_cap_bytes
                                       : static_cast<double>(pools_[pool].hardware.gpu.usable_memory_bytes());
}

// The request's partitioner with each stage's own times and memory (its
// kind's), or none where no split fits.
std::optional<step::StageSplit> MixedCandidates::split_of(const std::vector<const LayerContext*>& stage_layers,
                                                          const std::vector<double>& caps,
                                                          const ScheduleContext& context) const {
  const int n = stage_layers.front()->table().size();
  const int stages = context.schedule.stages;
  const int blocks = stage_layers.front()->blocks();
  if (request_.layer_counts) return step::split_from_counts(*request_.layer_counts, blocks);
  if (request_.layout) return step::split_from_layout(*request_.layout, blocks, stages, request_.mtp_layers);
  const auto at = [&](int stage) -> const LayerContext& { return *stage_layers[static_cast<std::size_t>(stage)]; };
  const auto time = [&](int stage, int i, int j) { return at(stage).table().stage_time_s(i, j); };
  const auto any = [](int, int, int) { return true; };
  switch (request_.partition) {
    case step::PartitionMethod::kUniform: return step::uniform_split(blocks, stages);
    case step::PartitionMethod::kParameters:
      return step::min_max_split(
          n, stages, [&](int stage, int i, int j) { return at(stage).table().params(i, j); }, any);
    case step::PartitionMethod::kTime: break;
    case step::PartitionMethod::kMemory:
      // Exact per-position memory needs one stage per rank; with more, the
      // split balances time and the replay checks memory.
      if (context.peak_points.empty()) break;
      // Each stage against its own kind's cap: its memory as a share of it.
      return step::memory_aware_split(
          n, stages, time,
          [&](int stage, int i, int j) {
            return stage_memory(at(stage), context, stage, i, j) / caps[static_cast<std::size_t>(stage)];
          },
          1.0, request_.balance_slack);
  }
  return step::min_max_split(n, stages, time, any);
}

bool MixedCandidates::expand(MixedPending& candidate) {
  const MixedLayout& layout = layouts_[candidate.layout];
  const ScheduleContext* context = schedule_of(*candidate.schedule, layout.pipeline.pp(), layout.microbatches);
  if (context == nullptr) {
    ++result_.rejected["schedule precondition (micro-batches, chunks)"];
    return false;
  }
  if (!memory_may_fit(layout, *context)) {
    ++result_.rejected["out of memory"];
    return false;
  }
  std::vector<const LayerContext*> stage_layers;
  std::vector<double> caps;
  for (int stage = 0; stage < context->schedule.stages; ++stage) {
    const std::size_t segment = layout.pipeline.segment_of(context->schedule.rank_of(stage));
    stage_layers.push_back(layout.segment_layers[segment]);
    caps.push_back(cap_of(layout.pipeline.segments[segment].pool));
  }
  candidate.split = split_of(stage_layers, caps, *context);
  if (!candidate.split) {
    ++result_.rejected["out of memory"];
    return false;
  }
  std::vector<const step::LayerTable*> segment_tables;
  for (const LayerContext* layers : layout.segment_layers) segment_tables.push_back(&layers->table());
  candidate.costs = std::make_shared<const step::ModelStageCosts>(
      mixed_stage_costs(segment_tables, layout.shape, layout.pipeline, *candidate.split, context->schedule));
  if (over_memory(*candidate.costs, *context, caps)) {
    candidate.costs.reset();
    ++result_.rejected["out of memory"];
    return false;
  }
  candidate.bound_s = std::max(candidate.bound_s, split_bound_s(*candidate.costs, *context, layout));
  candidate.expanded = true;
  return true;
}

// Whether the blocks can fit at all, spread as a fluid: each rank holds at
// its peak at least its blocks' training state and the schedule's fewest
// held micro-batches' activations, at its kind's t; the ranks' caps must
// hold the blocks at the cheapest block of each kind.
bool MixedCandidates::memory_may_fit(const MixedLayout& layout, const ScheduleContext& context) const {
  double room = 0;  // blocks the ranks could hold
  for (std::size_t segment = 0; segment < layout.segment_layers.size(); ++segment) {
    const LayerContext& layers = *layout.segment_layers[segment];
    double least = std::numeric_limits<double>::infinity();
    for (int block : layers.table().distinct_blocks()) {
      least = std::min(least, layers.state_bytes(block, block + 1) + layers.table().fp8_weight_copy_bytes(block, block + 1) +
                                  context.fewest_held * layers.table().activation_bytes(block, block + 1));
    }
    room += layout.pipeline.segments[segment].stages * cap_of(layout.pipeline.segments[segment].pool) / least;
  }
  return room >= layout.segment_layers.front()->blocks();
}

// Whether some rank's peak, as the schedule's memory profiles give it (the
// replay's own accounting), is over its kind's cap: no replay of it fits.
bool MixedCandidates::over_memory(const step::ModelStageCosts& costs, const ScheduleContext& context,
                                  const std::vector<double>& stage_caps) const {
  const std::vector<double> peaks = step::profile_peak_bytes(context.schedule, context.profiles, costs);
  for (std::size_t rank = 0; rank < peaks.size(); ++rank) {
    // Lowered a little, as the replay rounds bytes and sums in its own order.
    const auto stage = static_cast<std::size_t>(context.profiles[rank].stages.front());
    if (peaks[rank] * (1 - 1e-6) > stage_caps[stage]) return true;
  }
  return false;
}

// No replay beats the schedule's span bound for these costs plus the
// slowest rank's synchronisation and optimizer, which the step adds after
// the pipeline (step_bounds; each rank's on its own kind).
double MixedCandidates::split_bound_s(const step::ModelStageCosts& costs, const ScheduleContext& context,
                                      const MixedLayout& layout) const {
  step::StepOverhead overhead;
  const std::vector<step::RankPlatform> platforms = mixed_platforms(layout.pipeline, pools_, layout.shape);
  for (std::size_t rank = 0; rank < platforms.size(); ++rank) {
    const step::StaticMemory& memory = costs.static_memory[rank];
    const step::StepOverhead own =
        step::rank_step_overhead({static_cast<double>(memory.params), static_cast<double>(memory.expert_params),
                                  static_cast<double>(memory.fp8_params)},
                                 *platforms[rank].hardware, platforms[rank].shape);
    overhead.gradient_sync_s = std::max(overhead.gradient_sync_s, own.gradient_sync_s);
    overhead.optimizer_step_s = std::max(overhead.optimizer_step_s, own.optimizer_step_s);
  }
  return step::step_bounds(context.schedule, context.span, context.profiles, costs, overhead).iteration_time_s;
}

std::optional<MixedPlan> MixedCandidates::replay(const MixedPending& candidate) const {
  const MixedLayout& layout = layouts_[candidate.layout];
  const ScheduleChoice& choice = schedules_[*candidate.schedule];
  SearchGroup group;
  group.tp = layout.pipeline.segments.front().tp;
  group.pp = layout.pipeline.pp();
  group.dp = layout.dp;
  group.micro_batch_size = layout.micro_batch_size;
  group.microbatches = layout.microbatches;
  MixedPlan plan{layout.pipeline, describe_candidate(group, layout.shape, choice)};
  step::PipelineSetup setup = mixed_setup(plan.plan, layout.shape.seq_len);
  setup.memory_cap_bytes = static_cast<std::int64_t>(request_.memory_cap_bytes);
  const sim::Schedule schedule =
      step::run_schedule(choice.name, {group.pp, group.microbatches, choice.virtual_stages, 0}, false);
  sim::SimulationOptions options;
  options.validate = false;
  options.compute_critical_path = false;
  const step::ModelSimulation simulation = step::simulate_rank_platforms(
      schedule, *candidate.costs, *candidate.split, mixed_platforms(layout.pipeline, pools_, layout.shape),
      mixed_topology(layout.pipeline, pools_, tiers_, layout.dp), setup, layout.segment_layers.front()->model_flops(),
      options);
  if (!sim::fits_memory(simulation.report)) return std::nullopt;
  take_figures(simulation, plan.plan);
  return plan;
}

}  // namespace pipeplan::planner
