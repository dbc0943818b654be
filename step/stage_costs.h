// Per-stage costs of a model on hardware for a given split: the bridge from
// the layer cost model to the simulator's StageCost, and the static memory
// of each pipeline rank with its breakdown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/hardware.h"
#include "models/training_shape.h"
#include "sim/costs.h"
#include "sim/schedule.h"
#include "sim/topology.h"
#include "step/layer_table.h"
#include "step/stage_split.h"

namespace pipeplan::step {

// Parameters held (by a rank or a stage) and, of them, the routed experts',
// which have their own replicas (models::TrainingShape::expert_replicas).
struct RankParams {
  double all = 0;
  double expert = 0;
  double fp8 = 0;  // of all: FP8 linear layers' weights (the experts' among them)
};

// Static memory of one pipeline rank (one GPU of its tensor-parallel group).
struct StaticMemory {
  std::int64_t weights = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer = 0;
  std::int64_t buffers = 0;  // transient working memory (recompute, softmax gradient) and p2p buffers
  std::int64_t dispatcher_buffers = 0;  // of buffers: the MoE token dispatcher's (DeepEP's)
  std::int64_t params = 0;   // parameters held
  std::int64_t expert_params = 0;  // of them, the routed experts'
  std::int64_t fp8_params = 0;     // of them, FP8 linear layers'
  std::int64_t total() const { return weights + gradients + optimizer + buffers; }
};

struct ModelStageCosts {
  sim::PipelineCosts costs;                 // per stage (chunk); static bytes per rank
  std::vector<StaticMemory> static_memory;  // per rank
  std::vector<RankParams> stage_params;     // per stage (chunk): parameters held
};

// `schedule` gives the stage-to-rank mapping (its stages must equal the
// split's). Times come from the table (the hardware's time model).
ModelStageCosts build_stage_costs(const LayerTable& table, const models::TrainingShape& shape,
                                  const StageSplit& split, const sim::Schedule& schedule);
// The same with each stage's layers from its own table (`stage_tables`
// indexed by stage: per-stage recomputation tables each stage's setting);
// the tables differ in recomputation only (the shape's other fields).
ModelStageCosts build_stage_costs(const std::vector<const LayerTable*>& stage_tables,
                                  const models::TrainingShape& shape, const StageSplit& split,
                                  const sim::Schedule& schedule);

// Per rank, the names of the layers it holds, chunk by chunk.
std::vector<std::vector<std::string>> rank_layer_names(const LayerTable& table, const StageSplit& split,
                                                       const sim::Schedule& schedule);

// Pipeline ranks are t x d GPUs apart (Megatron's order: tensor innermost,
// then data, then pipeline): neighbours share a node while they fit in one.
sim::Topology pipeline_topology(const models::HardwareConfig& hardware, const models::TrainingShape& shape);

}  // namespace pipeplan::step
