// Costs the candidates of a plan search. For each group and recomputation
// the layers are expanded and timed once; each schedule is generated once per
// pipeline shape (p, m), when a candidate first needs it, and shared by the
// groups that have it; for each schedule the split is chosen by the
// request's partitioner. A candidate is bounded three times, each bound
// tighter than the last: before its schedule is generated, before its split
// is chosen, and before its replay; the search takes each step only while
// the candidate may still reach its results.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "planner/plan.h"
#include "planner/search/search_space.h"
#include "step/framework_support.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

struct LayerContext;
struct TabledLayers;
struct ScheduleContext;

// A candidate not yet replayed: where it comes from, its split once chosen,
// and the bounds no replay of it can beat (before the split: any split's;
// before its schedule is generated: any schedule's of its choice and shape).
struct PendingCandidate {
  std::size_t group = 0;     // into the search's groups
  std::size_t layers = 0;    // its sharding and recomputation, into the group's layer contexts
  std::size_t schedule = 0;  // into the schedule choices
  bool scheduled = false;
  std::optional<step::StageSplit> split;  // once chosen
  step::StepBounds bounds;
  double tokens_bound = 0;   // tokens per second it cannot exceed
  // Per-stage recomputation, once split: 1 + where the evaluator keeps
  // each stage's setting (into the layer context's stage_variants), 0 for
  // none (a search holds a million candidates: a vector each is too much);
  // or set when every stage took one setting (that setting's own candidate:
  // dropped).
  std::uint32_t stage_settings = 0;
  bool uniform_per_stage = false;
  // The frameworks that run it as planned (step::frameworks_running).
  step::FrameworkSet frameworks = 0;
  // A sharding tried only for the frameworks that cannot run the one that
  // dominates it (ZeRO-1): it may be their best, never the top's or the front's.
  bool framework_only = false;
  // Split as the frameworks that split a model themselves do
  // (step::framework_split: DeepSpeed's PipelineModule), not searched.
  bool framework_split = false;
};

// A candidate the memory partitioner found no split for.
struct UnfittedCandidate {
  std::size_t group = 0, layers = 0, schedule = 0;  // as in PendingCandidate
};

struct SearchTally {
  std::map<std::string, std::size_t> rejected;
  std::vector<UnfittedCandidate> unfitted;
  // The group's weights and their state alone are over the cap on some
  // rank: nothing of it was enumerated (enumerate it with `weights_check`
  // off for its unfitted candidates, when nothing fits anywhere).
  bool deferred = false;
};

class CandidateEvaluator {
 public:
  CandidateEvaluator(const PlanRequest& request, const std::vector<SearchGroup>& groups, double memory_cap_bytes);
  ~CandidateEvaluator();
  // The group's candidates that may fit, bounded before their schedules
  // are generated; safe to call for different groups at once.
  void enumerate_group(std::size_t group, std::vector<PendingCandidate>& pending, SearchTally& tally,
                       bool weights_check = true);
  // Generates the candidate's schedule (once per choice and shape) and
  // bounds it for any split; the reason it is refused (its schedule's
  // preconditions fail, or no split fits: then `unfitted`), or null. Safe
  // to call for different candidates at once.
  const char* schedule(PendingCandidate& pending, bool& unfitted) const;
  // Chooses the candidate's split (the request's partitioner; with
  // per-stage recomputation the split and the stages' settings together)
  // and bounds it for that split, or marks it uniform_per_stage; safe to
  // call for different candidates at once.
  void choose_split(PendingCandidate& pending) const;
  // The candidate's figures, exactly `pipeplan simulate --plan`'s (its split chosen).
  PlanCandidate replay(const PendingCandidate& pending) const;
  // The same; `redundant` set (and nothing replayed) where a searched
  // order's activation limit leaves every rank what the cap does, so that
  // the cap's own candidate is the same plan.
  PlanCandidate replay(const PendingCandidate& pending, bool& redundant) const;
  // Of candidates no split fits, the one that comes closest, with its
  // leanest split (by the partitioner's exact estimate; one chunk per rank
  // only); none when none has one.
  std::optional<PendingCandidate> closest_to_fitting(const std::vector<UnfittedCandidate>& unfitted) const;

 private:
  // The schedule choices that can run on p ranks, and why the others cannot.
  struct StageCountChoices {
    std::vector<std::size_t> usable;
    std::map<std::string, std::size_t> rejected;
  };
  struct ScheduleSlot;
  const ScheduleSlot& slot_of(std::size_t choice, const SearchGroup& group) const;
  // The choice's schedule at the group's (p, m), generated on first use;
  // null when its preconditions fail there.
  const ScheduleContext* schedule_of(std::size_t choice, const SearchGroup& group) const;
  // The layers of ranks of this shape, tabled once for every group whose
  // ranks cost alike.
  std::shared_ptr<const TabledLayers> tabled_layers(const models::TrainingShape& shape) const;
  // Whether every rank's share of the weights and their state is over the
  // cap at every sharding the group runs: no candidate of it can fit.
  bool weights_over_cap(const SearchGroup& group, const std::vector<models::ZeroStage>& zeros) const;
  // time_split's answer for the group's layer context, kept: schedules
  // with as many stages share one.
  std::optional<step::StageSplit> fastest_split(std::size_t group, std::size_t layers, int stages) const;
  // The uniform contexts a per-stage one chooses among, none first.
  std::vector<const LayerContext*> variants_of(std::size_t group, const LayerContext& layers) const;
  // some_split_fits and any_split_bounds, or their per-stage forms.
  bool split_fits(std::size_t group, const LayerContext& layers, const ScheduleContext& context) const;
  step::StepBounds split_bounds(std::size_t group, const LayerContext& layers, const ScheduleContext& context,
                                bool searched_split) const;

  const PlanRequest& request_;
  const std::vector<SearchGroup>& groups_;
  double cap_;
  std::vector<ScheduleChoice> schedules_;
  std::vector<const sim::ScheduleFamily*> families_;  // each choice's, looked up once
  std::vector<RecomputeChoice> recomputes_;
  std::map<int, StageCountChoices> stage_counts_;   // by p
  std::vector<std::vector<LayerContext>> layers_;  // per group, filled by enumerate_group
  // (choice, p, m) -> what bounds its schedules before one is generated,
  // and the schedule once generated.
  std::map<std::tuple<std::size_t, int, int>, std::unique_ptr<ScheduleSlot>> schedule_cache_;
  // (group, layers, stages) -> the fastest split, shared by the schedules
  // with as many stages; filled as candidates are split.
  using TableKey = std::array<int, 10>;
  mutable std::mutex tables_mutex_;
  mutable std::map<TableKey, std::shared_ptr<const TabledLayers>> tables_;
  mutable std::mutex stage_settings_mutex_;
  mutable std::vector<std::vector<std::size_t>> stage_settings_;  // PendingCandidate::stage_settings
  mutable std::mutex time_splits_mutex_;
  mutable std::map<std::tuple<std::size_t, std::size_t, int>, std::optional<step::StageSplit>> time_splits_;
};

}  // namespace pipeplan::planner
