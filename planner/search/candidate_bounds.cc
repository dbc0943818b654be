#include "planner/search/candidate_bounds.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "step/min_max_dp.h"

namespace pipeplan::planner {
namespace {

// What the busiest rank computes over the step, at least, whatever the
// split: a rank holds p x v / p = v stages of at least a block each, and
// some rank holds ceil(blocks / p) blocks; the embedding's and the output
// layer's ranks hold v blocks besides. Blocks counted at the cheapest.
double busiest_rank_floor_s(const step::LayerTable& table, const ScheduleContext& context) {
  const sim::SpanBound& span = context.span;
  const double scale = context.schedule.microbatch_scale;
  const double pass = table.pass_overhead_s();
  const double hidden = span.pairs_passes() ? 1 : 0;  // the communication a pair may hide
  const auto work = [&](int k) {
    return span.stage_work_s(
        scale * (table.forward_s(k, k + 1) - hidden * table.forward_comm_s(k, k + 1)) +
            table.forward_overhead_s(k, k + 1) - pass,
        scale * (table.backward_input_s(k, k + 1) - hidden * table.backward_input_comm_s(k, k + 1)) +
            table.backward_overhead_s(k, k + 1) - pass,
        scale * table.backward_weight_s(k, k + 1));
  };
  const int n = table.size(), blocks = n - 2, ranks = context.schedule.ranks;
  if (blocks < 1 || ranks < 1 || context.schedule.stages % ranks != 0) return 0;
  double cheapest = std::numeric_limits<double>::infinity();
  for (int k : table.distinct_blocks()) cheapest = std::min(cheapest, work(k));
  const int chunks = context.schedule.stages / ranks;
  const int most_blocks = (blocks + ranks - 1) / ranks;
  const double held = std::max({most_blocks * cheapest, work(0) + chunks * cheapest, work(n - 1) + chunks * cheapest});
  return held + chunks * span.stage_work_s(pass, pass, 0);
}

}  // namespace

double stage_memory_max(const LayerContext& layers, const ScheduleContext& context, const step::StageSplit& split) {
  double worst = 0;
  for (int stage = 0; stage < split.stages(); ++stage) {
    worst = std::max(worst, stage_memory(layers, context, stage, split.first_layer(stage), split.end_layer(stage)));
  }
  return worst;
}

// What no split's largest rank memory can go below: the ranks' average of
// the weights and their state, with each rank's activations counted at the
// fewest micro-batches any rank holds in full at its peak. Exact as a
// bound: a candidate above the cap has no split under it, and is refused
// without the search for one.
double rank_memory_floor(const LayerContext& layers, const ScheduleContext& context) {
  const step::LayerTable& table = layers.table();
  const int n = table.size();
  const double total =
      layers.state_bytes(0, n) + table.fp8_weight_copy_bytes(0, n) + context.fewest_held * table.activation_bytes(0, n);
  return total / context.schedule.ranks;
}

std::int64_t peak_bound_bytes(const LayerContext& layers, const ScheduleContext& context) {
  return static_cast<std::int64_t>(rank_memory_floor(layers, context) * (1 - 1e-6));
}

// Whether the request's partitioner finds a split under the cap, without
// choosing one: exactly when `partition` does (the memory partitioner is
// the only one that refuses, and only where no split fits).
bool some_split_fits(const LayerContext& layers, const ScheduleContext& context, const PlanRequest& request,
                     double cap) {
  if (request.layer_counts || request.layout || request.partition != step::PartitionMethod::kMemory) return true;
  if (rank_memory_floor(layers, context) > cap) return false;
  if (context.peak_points.empty()) return true;
  return step::any_split_fits(layers.table().size(), context.schedule.stages, [&](int stage, int i, int j) {
    return stage_memory(layers, context, stage, i, j) <= cap;
  });
}

// Bounds for every split: the pipeline no shorter than the schedule's
// any-split bound or the busiest rank's least compute, plus the step
// overhead of a rank holding the average share of the weights; the peak no
// lower than the memory floor. Lowered a little, as the replay rounds bytes
// and sums times in its own order (and by more than the chosen split's
// bound: where the two are equal, the order of sums must not lift this one
// above it).
step::StepBounds any_split_bounds(const LayerContext& layers, const ScheduleContext& context,
                                  const models::HardwareConfig& hardware, bool searched_split) {
  const step::LayerTable& table = layers.table();
  const int n = table.size();
  const double scale = context.schedule.microbatch_scale;
  // As the stage costs: forwards and input gradients each pay a pass
  // overhead per stage and their layers' overheads, whatever the split.
  const double more_passes = (context.schedule.stages - 1) * table.pass_overhead_s();
  const double hidden = context.span.pairs_passes() ? 1 : 0;  // the communication a pair may hide
  double pipeline = context.span.any_split_bound_s(
      scale * (table.forward_s(0, n) - hidden * table.forward_comm_s(0, n)) + table.forward_overhead_s(0, n) +
          more_passes,
      scale * (table.backward_input_s(0, n) - hidden * table.backward_input_comm_s(0, n)) +
          table.backward_overhead_s(0, n) + more_passes,
      scale * table.backward_weight_s(0, n));
  // A given split may leave a stage without a block; the searched ones never do.
  if (searched_split) pipeline = std::max(pipeline, busiest_rank_floor_s(table, context));
  // Each stage's parameters are rounded to whole ones: a stage's worth below the average.
  // The sync of the dense weights and of the experts each grow with their
  // own count, so the busiest rank's is no less than either alone at the
  // average (a rank may hold no experts; the optimizer steps both as one).
  const double ranks = context.schedule.ranks, stages = context.schedule.stages;
  const double experts = table.expert_params(0, n);
  const double dense = std::max(0.0, (table.params(0, n) - experts) / ranks - stages);
  const double expert = std::max(0.0, experts / ranks - stages);
  // Every weight counted as FP8's, gathered in its fewest bytes.
  step::StepOverhead overhead =
      step::rank_step_overhead({dense + expert, expert, dense + expert}, hardware, layers.shape);
  overhead.gradient_sync_s =
      std::max(step::rank_step_overhead({dense, 0, dense}, hardware, layers.shape).gradient_sync_s,
               step::rank_step_overhead({expert, expert, expert}, hardware, layers.shape).gradient_sync_s);
  step::StepBounds bounds;
  bounds.iteration_time_s = (pipeline + overhead.gradient_sync_s + overhead.optimizer_step_s) * (1 - 1e-8);
  bounds.peak_bytes = peak_bound_bytes(layers, context);
  return bounds;
}

}  // namespace pipeplan::planner
