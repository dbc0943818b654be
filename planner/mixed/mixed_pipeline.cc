#include "planner/mixed/mixed_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "common/error.h"
#include "models/layers.h"
#include "models/time_model.h"
#include "planner/report/plan_replay.h"
#include "step/zero_support.h"

namespace pipeplan::planner {

std::vector<KindPool> kind_pools(const models::ClusterConfig& cluster) {
  std::vector<KindPool> pools;
  for (const models::NodeGroup& group : cluster.groups) {
    const bool known = std::any_of(pools.begin(), pools.end(),
                                   [&](const KindPool& pool) { return pool.kind == group.hardware.name; });
    if (known) continue;
    KindPool pool{group.hardware.name, models::cluster_hardware(models::cluster_kind(cluster, group.hardware.name)), {}};
    int node = 0;
    for (const models::NodeGroup& other : cluster.groups) {
      for (int i = 0; i < other.nodes; ++i, ++node) {
        if (other.hardware.name == pool.kind) pool.nodes.push_back(node);
      }
    }
    pools.push_back(std::move(pool));
  }
  return pools;
}

int MixedPipeline::pp() const {
  int stages = 0;
  for (const KindSegment& segment : segments) stages += segment.stages;
  return stages;
}

std::size_t MixedPipeline::segment_of(int rank) const {
  for (std::size_t segment = 0; segment < segments.size(); ++segment) {
    if (rank < segments[segment].stages) return segment;
    rank -= segments[segment].stages;
  }
  throw std::logic_error("a pipeline rank past the last segment");
}

void check_pool_gpus(const MixedPipeline& pipeline, const std::vector<KindPool>& pools, int dp) {
  std::map<std::size_t, long long> needed;
  for (const KindSegment& segment : pipeline.segments) {
    if (segment.pool >= pools.size()) throw std::logic_error("a segment names no pool");
    needed[segment.pool] += static_cast<long long>(segment.stages) * segment.tp * dp;
  }
  for (const auto& [pool, gpus] : needed) {
    if (gpus > pools[pool].gpus()) {
      throw InputError(fmt::format("the plan needs {} GPUs of {} (stages x t x d) and the cluster has {}: fewer "
                                   "stages or a smaller t or d on that kind",
                                   gpus, pools[pool].kind, pools[pool].gpus()));
    }
  }
}

models::TrainingShape segment_shape(const models::TrainingShape& shape, const KindSegment& segment) {
  models::TrainingShape result = shape;
  result.tp = segment.tp;
  result.sequence_parallel = shape.sequence_parallel && segment.tp > 1;
  result.runtime.tp_comm_overlap = shape.runtime.tp_comm_overlap && result.sequence_parallel;
  result.pipeline_first_ranks = 0;
  return result;
}

step::PipelineSetup mixed_setup(const PlanCandidate& plan, int seq_len) {
  step::PipelineSetup setup = plan_setup(plan, seq_len);
  setup.shape.sequence_parallel = plan.sequence_parallel;
  setup.shape.runtime.tp_comm_overlap = plan.runtime.tp_comm_overlap && plan.sequence_parallel;
  return setup;
}

namespace {

sim::LinkSpec sim_link(const models::LinkSpec& link) { return {link.latency_s, link.bandwidth}; }

// Rank `local` of its kind's ranks (counted from the pool's first GPU):
// its first GPU is local x t x d, in the pool's own nodes.
sim::RankPort rank_port(const KindPool& pool, long long first_gpu, const std::vector<models::NetworkTier>& tiers) {
  const models::HardwareConfig& hardware = pool.hardware;
  const int per_node = std::max(1, hardware.gpus_per_node);
  const auto local_node = static_cast<std::size_t>(first_gpu / per_node);
  // An NVLink domain of several nodes is one "node" to the pipeline's links.
  const std::size_t domain_nodes = static_cast<std::size_t>(std::max(1, hardware.local_gpus() / per_node));
  sim::RankPort port;
  port.node = pool.nodes[local_node / domain_nodes * domain_nodes];
  port.intra_node = {hardware.node_link.latency_s, hardware.node_link.bandwidth};
  const int node = pool.nodes[local_node];
  for (std::size_t tier = 0; tier < tiers.size(); ++tier) {
    port.switches.push_back(tiers[tier].nodes > 0 ? node / tiers[tier].nodes : 0);
    port.tier_links.push_back(sim_link(models::network_tier_link(hardware, tier)));
  }
  port.network = sim_link(models::network_tier_link(hardware, tiers.size()));
  return port;
}

}  // namespace

sim::Topology mixed_topology(const MixedPipeline& pipeline, const std::vector<KindPool>& pools,
                             const std::vector<models::NetworkTier>& tiers, int dp) {
  sim::Topology topology;
  std::map<std::size_t, long long> used;  // GPUs of each pool the segments before took
  for (const KindSegment& segment : pipeline.segments) {
    const KindPool& pool = pools[segment.pool];
    long long& first = used[segment.pool];
    for (int stage = 0; stage < segment.stages; ++stage) {
      topology.ports.push_back(rank_port(pool, first, tiers));
      first += static_cast<long long>(segment.tp) * dp;
    }
  }
  // Host copies are each GPU's own: the first segment's kind's.
  const models::HardwareConfig& first = pools[pipeline.segments.front().pool].hardware;
  topology.host = {first.host_link.latency_s, first.host_link.bandwidth};
  return topology;
}

std::vector<step::RankPlatform> mixed_platforms(const MixedPipeline& pipeline, const std::vector<KindPool>& pools,
                                                const models::TrainingShape& shape) {
  std::vector<step::RankPlatform> platforms;
  for (const KindSegment& segment : pipeline.segments) {
    for (int stage = 0; stage < segment.stages; ++stage) {
      platforms.push_back({&pools[segment.pool].hardware, segment_shape(shape, segment)});
    }
  }
  return platforms;
}

step::ModelStageCosts mixed_stage_costs(const std::vector<const step::LayerTable*>& segment_tables,
                                        const models::TrainingShape& shape, const MixedPipeline& pipeline,
                                        const step::StageSplit& split, const sim::Schedule& schedule) {
  std::vector<const step::LayerTable*> stage_tables;
  for (int stage = 0; stage < schedule.stages; ++stage) {
    stage_tables.push_back(segment_tables[pipeline.segment_of(schedule.rank_of(stage))]);
  }
  step::ModelStageCosts costs = step::build_stage_costs(stage_tables, shape, split, schedule);
  for (int stage = 0; stage + 1 < schedule.stages; ++stage) {
    const auto index = static_cast<std::size_t>(stage);
    if (stage_tables[index] == stage_tables[index + 1]) continue;
    // Each rank of the narrower group sends or takes the larger shard.
    const double larger = std::max(stage_tables[index]->boundary_bytes(split.end_layer(stage)),
                                   stage_tables[index + 1]->boundary_bytes(split.end_layer(stage)));
    sim::StageCost& cost = costs.costs.stages[index];
    const auto bytes = static_cast<std::int64_t>(std::llround(larger * schedule.microbatch_scale));
    const std::int64_t added = 2 * (bytes - cost.send_bytes);
    const auto rank = static_cast<std::size_t>(schedule.rank_of(stage));
    costs.static_memory[rank].buffers += added;
    costs.costs.static_bytes[rank] += added;
    cost.send_bytes = bytes;
  }
  return costs;
}

step::ModelSimulation simulate_mixed(const models::ModelConfig& model, const std::vector<KindPool>& pools,
                                     const std::vector<models::NetworkTier>& tiers, const MixedPipeline& pipeline,
                                     const step::PipelineSetup& setup, const sim::SimulationOptions& options) {
  if (pipeline.pp() != setup.pp) throw std::logic_error("the setup's p is the segments' stages");
  check_pool_gpus(pipeline, pools, setup.shape.dp);
  step::check_zero_pipeline(setup.shape.zero, setup.pp, setup.schedule);
  const sim::Schedule schedule = step::run_schedule(
      setup.schedule, {setup.pp, setup.microbatches, setup.virtual_stages, setup.microbatch_group_size}, false);
  std::vector<models::ModelLayers> layers;
  std::vector<step::LayerTable> tables;
  layers.reserve(pipeline.segments.size());
  tables.reserve(pipeline.segments.size());
  for (const KindSegment& segment : pipeline.segments) {
    const models::TrainingShape shape = segment_shape(setup.shape, segment);
    layers.push_back(models::expand_layers(model, shape));
    tables.emplace_back(layers.back(), pools[segment.pool].hardware, shape);
  }
  std::vector<const step::LayerTable*> segment_tables;
  for (const step::LayerTable& table : tables) segment_tables.push_back(&table);
  step::StageSplit split =
      setup.split ? *setup.split : step::even_split(layers.front().transformer_layers(), schedule.stages);
  const step::ModelStageCosts costs = mixed_stage_costs(segment_tables, setup.shape, pipeline, split, schedule);
  const double flops = models::model_flops_per_microbatch(layers.front(), segment_shape(setup.shape, pipeline.segments.front()));
  step::ModelSimulation result =
      step::simulate_rank_platforms(schedule, costs, std::move(split), mixed_platforms(pipeline, pools, setup.shape),
                                    mixed_topology(pipeline, pools, tiers, setup.shape.dp), setup, flops, options);
  // Layer names are the model's, whatever kind or t times them.
  result.layers = step::rank_layer_names(tables.front(), result.split, schedule);
  result.schedule = schedule;
  return result;
}

}  // namespace pipeplan::planner
