// A pipeline over a cluster of several GPU kinds. Consecutive stages run
// on one kind's GPUs, each kind with its own tensor-parallel size; every
// data-parallel replica is laid out alike, so each kind's GPUs hold its
// stages' d replicas (within the kind Megatron's default order: tensor
// innermost, then data, then pipeline). Each stage is costed on its kind
// (time model, usable memory), each stage-to-stage message at the link
// between the two ranks' nodes, each rank's gradient synchronisation on
// its kind's fabric.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "models/training_shape.h"
#include "planner/plan.h"
#include "sim/schedule.h"
#include "sim/topology.h"
#include "step/layer_table.h"
#include "step/model_simulation.h"
#include "step/stage_costs.h"
#include "step/stage_split.h"

namespace pipeplan::planner {

// One GPU kind's share of a cluster.
struct KindPool {
  std::string kind;                 // its hardware's name ("h100-sxm")
  models::HardwareConfig hardware;  // its nodes as a cluster of their own, under the cluster's tiers
  std::vector<int> nodes;           // the cluster's index of each of its nodes, in order
  int gpus() const { return static_cast<int>(nodes.size()) * hardware.gpus_per_node; }
};

// The cluster's kinds, in the order their first node group comes. Throws
// InputError where one kind's node groups differ in shape.
std::vector<KindPool> kind_pools(const models::ClusterConfig& cluster);

// Consecutive pipeline ranks on one kind.
struct KindSegment {
  std::size_t pool = 0;  // into the pools
  int stages = 1;        // pipeline ranks
  int tp = 1;
  friend bool operator==(const KindSegment&, const KindSegment&) = default;
};

struct MixedPipeline {
  std::vector<KindSegment> segments;  // in pipeline order
  int pp() const;
  // The segment holding pipeline rank `rank`.
  std::size_t segment_of(int rank) const;
  friend bool operator==(const MixedPipeline&, const MixedPipeline&) = default;
};

// GPUs each pool gives the pipeline (stages x t x d per segment, summed
// by pool); InputError naming the kind where a pool has fewer.
void check_pool_gpus(const MixedPipeline& pipeline, const std::vector<KindPool>& pools, int dp);

// A segment's training shape: `shape` with its t (sequence parallelism and
// the TP overlap, as `shape` asks for them, where t > 1).
models::TrainingShape segment_shape(const models::TrainingShape& shape, const KindSegment& segment);

// What a plan over kinds runs with (plan_setup): its shape asks for
// sequence parallelism and the TP overlap as the plan does, each segment
// taking them where its t allows (segment_shape).
step::PipelineSetup mixed_setup(const PlanCandidate& plan, int seq_len);

// Each pipeline rank's node (its NVLink domain's first node, by the
// cluster's count) and its port's links at each tier.
sim::Topology mixed_topology(const MixedPipeline& pipeline, const std::vector<KindPool>& pools,
                             const std::vector<models::NetworkTier>& tiers, int dp);

// Each pipeline rank's kind and shape.
std::vector<step::RankPlatform> mixed_platforms(const MixedPipeline& pipeline, const std::vector<KindPool>& pools,
                                                const models::TrainingShape& shape);

// Stage costs with each stage's layers from its segment's table
// (`segment_tables`, by segment); a message between ranks of different t
// is as large as the larger of the two ranks' shards of it.
step::ModelStageCosts mixed_stage_costs(const std::vector<const step::LayerTable*>& segment_tables,
                                        const models::TrainingShape& shape, const MixedPipeline& pipeline,
                                        const step::StageSplit& split, const sim::Schedule& schedule);

// The pipeline simulated with `setup` (its shape's t unused: each
// segment's; its split given, or Megatron's even one).
step::ModelSimulation simulate_mixed(const models::ModelConfig& model, const std::vector<KindPool>& pools,
                                     const std::vector<models::NetworkTier>& tiers, const MixedPipeline& pipeline,
                                     const step::PipelineSetup& setup, const sim::SimulationOptions& options = {});

}  // namespace pipeplan::planner
