// The candidates of a plan search over several GPU kinds (mixed_search.h):
// layouts (the kinds in pipeline order, each kind's t and so its stages,
// d, micro-batch size, recomputation), each bounded before any of its
// schedules is generated; a layout's candidates, one per schedule choice,
// each bounded for any split; a candidate expanded (its schedule
// generated, its split chosen, bounded for that split) and replayed.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/cluster.h"
#include "planner/mixed/mixed_pipeline.h"
#include "planner/mixed/mixed_search.h"
#include "planner/search/search_contexts.h"
#include "planner/search/search_space.h"

namespace pipeplan::planner {

struct MixedLayout {
  MixedPipeline pipeline;
  int dp = 1, micro_batch_size = 1, microbatches = 1;
  RecomputeChoice recompute;
  models::TrainingShape shape;  // the common one (each segment's t: segment_shape)
  std::vector<const LayerContext*> segment_layers;
};

// An entry of the search: a layout (every schedule choice of it, bounded
// by the least of their bounds), or one candidate of it, expanded or not.
struct MixedPending {
  std::size_t layout = 0;
  std::optional<std::size_t> schedule;  // into the choices; none: the layout's every choice
  double bound_s = 0;
  bool expanded = false;
  std::optional<step::StageSplit> split;
  std::shared_ptr<const step::ModelStageCosts> costs;
};

class MixedCandidates {
 public:
  // Counts what it drops in `result.rejected`.
  MixedCandidates(const PlanRequest& request, const std::vector<KindPool>& pools,
                  const std::vector<models::NetworkTier>& tiers, MixedSearchResult& result);
  ~MixedCandidates();

  // Every layout over two or more kinds, bounded.
  std::vector<MixedPending> layouts();
  // The layout's candidate of each schedule choice that can run it, each
  // bounded for any split.
  std::vector<MixedPending> candidates_of(const MixedPending& layout);
  // Candidates an entry stands for: itself, or a layout's choices.
  std::size_t choices_in(const MixedPending& entry) const;
  // Generates the candidate's schedule (once per choice and shape),
  // splits it and bounds it for that split; false (the reason counted)
  // where its schedule cannot run or no split fits.
  bool expand(MixedPending& candidate);
  // An expanded candidate replayed; none where some rank is over its memory.
  std::optional<MixedPlan> replay(const MixedPending& candidate) const;

 private:
  void orders(std::vector<std::size_t>& order, std::vector<bool>& used);
  void segments(const std::vector<std::size_t>& order, int d, MixedPipeline& pipeline);
  void add(const MixedPipeline& pipeline, int d, int b, const RecomputeChoice& recompute);
  bool runs(std::size_t choice, const MixedLayout& layout) const;
  bool fits_given_split(int stages) const;
  double one_chunk_bound_s(const MixedLayout& layout) const;
  const ScheduleContext* schedule_of(std::size_t choice, int pp, int microbatches);
  const LayerContext& layers_of(std::size_t pool, const models::TrainingShape& shape);
  double cap_of(std::size_t pool) const;
  std::optional<step::StageSplit> split_of(const std::vector<const LayerContext*>& stage_layers,
                                           const std::vector<double>& caps, const ScheduleContext& context) const;
  bool memory_may_fit(const MixedLayout& layout, const ScheduleContext& context) const;
  bool over_memory(const step::ModelStageCosts& costs, const ScheduleContext& context,
                   const std::vector<double>& stage_caps) const;
  double split_bound_s(const step::ModelStageCosts& costs, const ScheduleContext& context,
                       const MixedLayout& layout) const;

  const PlanRequest& request_;
  const std::vector<KindPool>& pools_;
  const std::vector<models::NetworkTier>& tiers_;
  MixedSearchResult& result_;
  std::vector<ScheduleChoice> schedules_;
  std::vector<bool> generated_;  // per choice: a generated schedule (pipelines over kinds take no other)
  std::vector<RecomputeChoice> recomputes_;
  std::vector<std::vector<int>> tps_;  // per pool
  std::vector<MixedLayout> layouts_;
  std::map<std::tuple<std::size_t, int, int>, std::unique_ptr<ScheduleContext>> schedule_cache_;
  using LayersKey = std::tuple<std::size_t, int, int, int, int, int>;
  std::map<LayersKey, std::shared_ptr<const TabledLayers>> tables_;
  std::map<LayersKey, LayerContext> layers_;  // a map: its elements stay where they are
};

}  // namespace pipeplan::planner
