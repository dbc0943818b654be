// What the candidates of a plan search share: a group's expanded and
// tabled layers for one sharding and recomputation, and a generated
// schedule's memory profiles and span bound.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "models/training_shape.h"
#include "planner/search/search_space.h"
#include "sim/schedule.h"
#include "sim/span_bound.h"
#include "step/layer_table.h"
#include "step/memory_profile.h"

namespace pipeplan::planner {

// A model's layers tabled for one per-rank shape, with what the expansion
// gave besides; groups whose ranks cost alike (they differ in p and d only)
// share one.
struct TabledLayers {
  step::LayerTable table;
  int blocks;  // transformer layers (the expanded layers are dropped once tabled)
  double model_flops;
};

// What all candidates of a group and recomputation share.
struct LayerContext {
  models::TrainingShape shape;
  std::shared_ptr<const TabledLayers> tabled;
  double state_bytes_per_param;         // dense weights
  double expert_state_bytes_per_param;  // routed experts (their own replicas)
  // Per-stage recomputation: the group's contexts (by index) of each
  // setting a stage may take, none first; this context is none's.
  std::vector<std::size_t> stage_variants{};
  const step::LayerTable& table() const { return tabled->table; }
  int blocks() const { return tabled->blocks; }
  double model_flops() const { return tabled->model_flops; }
  // Training state of layers [i, j).
  double state_bytes(int i, int j) const {
    return table().params(i, j) * state_bytes_per_param +
           table().expert_params(i, j) * (expert_state_bytes_per_param - state_bytes_per_param);
  }
};

// A generated schedule with what bounds it for any costs: its memory
// profiles and its span bound; for one chunk per rank, the profiles'
// (M_B, M_W) multiplicities at each memory peak candidate. The actions are
// dropped once bounded (a search holds hundreds of schedules) and
// generated again for a replay.
struct ScheduleContext {
  const ScheduleChoice& choice;
  sim::Schedule schedule;  // without its actions
  std::vector<step::RankMemoryProfile> profiles;
  std::vector<std::vector<std::pair<int, int>>> peak_points;
  sim::SpanBound span;
  // The fewest micro-batches some rank's peak must hold in full on every
  // chunk of the rank (the least, over ranks, of the most at any point).
  int fewest_held = 0;
};

}  // namespace pipeplan::planner
