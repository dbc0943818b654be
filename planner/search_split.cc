#include "planner/search_split.h"

#include "planner/candidate_bounds.h"
#include "planner/min_max_dp.h"

namespace pipeplan::planner {

std::optional<StageSplit> time_split(const LayerContext& layers, int stages) {
  const LayerTable& table = layers.table();
  return min_max_split(
      table.size(), stages, [&](int, int i, int j) { return table.stage_time_s(i, j); },
      [](int, int, int) { return true; });
}

std::optional<StageSplit> leanest_split(const LayerContext& layers, const ScheduleContext& context) {
  if (context.peak_points.empty()) return std::nullopt;
  return min_max_split(
      layers.table().size(), context.schedule.stages,
      [&](int stage, int i, int j) { return stage_memory(layers, context, stage, i, j); },
      [](int, int, int) { return true; });
}

std::optional<StageSplit> partition(const LayerContext& layers, const ScheduleContext& context,
                                    const PlanRequest& request, double cap,
                                    const std::function<std::optional<StageSplit>(int)>& fastest) {
  const LayerTable& table = layers.table();
  const int n = table.size();
  const int stages = context.schedule.stages;
  auto time = [&](int, int i, int j) { return table.stage_time_s(i, j); };
  const int blocks = layers.blocks();
  if (request.layer_counts) return split_from_counts(*request.layer_counts, blocks);
  if (request.layout) return split_from_layout(*request.layout, blocks, stages);
  switch (request.partition) {
    case PartitionMethod::kUniform: return uniform_split(blocks, stages);
    case PartitionMethod::kParameters:
      return min_max_split(
          n, stages, [&](int, int i, int j) { return table.params(i, j); }, [](int, int, int) { return true; });
    case PartitionMethod::kTime: break;
    case PartitionMethod::kMemory:
      // Exact per-position memory needs one stage per rank; with more, the
      // split balances time and the replay checks memory.
      if (context.peak_points.empty()) break;
      if (rank_memory_floor(layers, context) > cap) return std::nullopt;
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
  return fastest(stages);
}

}  // namespace pipeplan::planner
