#include "planner/search/search_split.h"

#include "planner/search/candidate_bounds.h"
#include "step/min_max_dp.h"

namespace pipeplan::planner {

std::optional<step::StageSplit> time_split(const LayerContext& layers, int stages) {
  const step::LayerTable& table = layers.table();
  return step::min_max_split(
      table.size(), stages, [&](int, int i, int j) { return table.stage_time_s(i, j); },
      [](int, int, int) { return true; });
}

std::optional<step::StageSplit> leanest_split(const LayerContext& layers, const ScheduleContext& context) {
  if (context.peak_points.empty()) return std::nullopt;
  return step::min_max_split(
      layers.table().size(), context.schedule.stages,
      [&](int stage, int i, int j) { return stage_memory(layers, context, stage, i, j); },
      [](int, int, int) { return true; });
}

std::optional<step::StageSplit> partition(const LayerContext& layers, const ScheduleContext& context,
                                          const PlanRequest& request, double cap,
                                          const std::function<std::optional<step::StageSplit>(int)>& fastest) {
  const step::LayerTable& table = layers.table();
  const int n = table.size();
  const int stages = context.schedule.stages;
  auto time = [&](int, int i, int j) { return table.stage_time_s(i, j); };
  const int blocks = layers.blocks();
  if (request.layer_counts) return step::split_from_counts(*request.layer_counts, blocks);
  if (request.layout) return step::split_from_layout(*request.layout, blocks, stages, request.mtp_layers);
  switch (request.partition) {
    case step::PartitionMethod::kUniform: return step::uniform_split(blocks, stages);
    case step::PartitionMethod::kParameters:
      return step::min_max_split(
          n, stages, [&](int, int i, int j) { return table.params(i, j); }, [](int, int, int) { return true; });
    case step::PartitionMethod::kTime: break;
    case step::PartitionMethod::kMemory:
      // Exact per-position memory needs one stage per rank; with more, the
      // split balances time and the replay checks memory.
      if (context.peak_points.empty()) break;
      if (rank_memory_floor(layers, context) > cap) return std::nullopt;
      // The lowest peak is the objective: the leanest split, if it fits.
      if (request.objective == Objective::kMemory) {
        std::optional<step::StageSplit> leanest = leanest_split(layers, context);
        if (leanest && stage_memory_max(layers, context, *leanest) > cap) return std::nullopt;
        return leanest;
      }
      return step::memory_aware_split(
          n, stages, time, [&](int stage, int i, int j) { return stage_memory(layers, context, stage, i, j); }, cap,
          request.balance_slack);
  }
  return fastest(stages);
}

}  // namespace pipeplan::planner
