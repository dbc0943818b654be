// A GPU's network port shared by its stage-to-stage messages, the
// collectives of groups that leave its NVLink domain and the overlapped
// gradient reduction: hand-worked figures on small pipelines.
#include "sim/port_sharing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/time_model.h"
#include "sim/generators/registry.h"
#include "sim/simulate.h"
#include "step/model_report.h"
#include "step/model_simulation.h"
#include "step/step_overhead.h"

namespace pipeplan {
namespace {

TEST(PortSharing, CollectivesBeyondTheNodeHoldThePortForAllTheirTime) {
  const models::HardwareConfig hw = models::load_hardware("h100-sxm");  // 8 GPUs a node
  models::TrainingShape shape;
  shape.tp = 16;
  shape.runtime.tp_comm_overlap = true;  // hidden behind the GEMMs, still on the port
  models::PassWork pass;
  pass.gemms = {{1e4, 1e4, 1e4, 1}};
  pass.collectives = {{models::CollectiveKind::kAllGather, 64e6, 2}};
  const models::PassTerms terms = models::pass_terms(pass, hw, shape);
  EXPECT_DOUBLE_EQ(terms.network_port_s, 2 * models::all_gather_s(64e6, 16, models::link_for_group(hw, 16, 1)));
  EXPECT_DOUBLE_EQ(models::link_for_group(hw, 16, 1).bandwidth, hw.network.bandwidth);
  EXPECT_LT(terms.tp_comm_s, terms.network_port_s);
  // Within a node NVLink carries it: the port is free.
  shape.tp = 8;
  EXPECT_EQ(models::pass_terms(pass, hw, shape).network_port_s, 0);
  // ZeRO-3's gathers over d = 4 replicas t = 8 apart span four nodes.
  shape.dp = 4;
  shape.zero = models::ZeroStage::kWeights;
  pass.collectives.clear();
  pass.shard_collectives = {{models::CollectiveKind::kAllGather, 1e9, 1}};
  EXPECT_DOUBLE_EQ(models::pass_terms(pass, hw, shape).network_port_s,
                   models::all_gather_s(1e9, 4, models::link_for_group(hw, 4, 8)));
}

// Two stages on two nodes, one micro-batch: F 4 s (2 s of it on the
// port), B 8 s (2 s), messages of `message_s` on a 1 GB/s link.
sim::SimulationReport two_stages(double message_s, int ranks_per_node) {
  const sim::Schedule schedule = sim::generate_schedule("1F1B", {2, 1});
  sim::PipelineCosts costs;
  costs.static_bytes = {0, 0};
  for (int stage = 0; stage < 2; ++stage) {
    sim::StageCost cost;
    cost.forward_s = 4;
    cost.backward_input_s = 8;
    cost.forward_network_s = cost.backward_input_network_s = 2;
    cost.send_bytes = static_cast<std::int64_t>(message_s * 1e9);
    costs.stages.push_back(cost);
  }
  sim::Topology topology;
  topology.intra_node = topology.inter_node = {0, 1e9};
  topology.ranks_per_node = ranks_per_node;
  return sim::simulate(schedule, costs, topology);
}

TEST(PortSharing, AMessageDelaysThePassByItsOverlapWithTheCollectives) {
  // A 1 s message meets the forward's collectives half of its time (2 of
  // 4 s) and the backward's a quarter: F 4.5, B 8.25. F, message, F, B,
  // message, B.
  EXPECT_DOUBLE_EQ(two_stages(1, 1).makespan_s, 4.5 + 1 + 4.5 + 8.25 + 1 + 8.25);
  // On one node the message takes NVLink: nothing shared.
  EXPECT_DOUBLE_EQ(two_stages(1, 2).makespan_s, 4 + 1 + 4 + 8 + 1 + 8);
  // A message longer than the pass delays it by no more than the
  // collectives' own 2 s.
  EXPECT_DOUBLE_EQ(two_stages(10, 1).makespan_s, 6 + 10 + 6 + 10 + 10 + 10);
}

TEST(PortSharing, SharedCostsAreAppliedOnce) {
  const sim::Schedule schedule = sim::generate_schedule("1F1B", {2, 1});
  sim::PipelineCosts costs;
  costs.static_bytes = {0, 0};
  costs.stages.assign(2, sim::StageCost{});
  for (sim::StageCost& cost : costs.stages) {
    cost.forward_s = 4;
    cost.forward_network_s = 2;
    cost.send_bytes = 1'000'000'000;
  }
  sim::Topology topology;
  topology.inter_node = {0, 1e9};
  topology.ranks_per_node = 1;
  const auto shared = sim::port_shared_costs(schedule, costs, topology);
  ASSERT_TRUE(shared.has_value());
  EXPECT_DOUBLE_EQ(shared->stages[0].forward_s, 4.5);
  EXPECT_EQ(shared->stages[0].forward_network_s, 0);
  EXPECT_FALSE(sim::port_shared_costs(schedule, *shared, topology).has_value());
  costs.stages[0].forward_network_s = costs.stages[1].forward_network_s = 0;
  EXPECT_FALSE(sim::port_shared_costs(schedule, costs, topology).has_value());
}

// The overlapped reduction of two stages of one layer each, d = 2 replicas
// t apart: stage 0's gradients final at 10 s (the pipeline's end), stage
// 1's at 8 s, after which rank 1 sends one input gradient back over the
// network (3 s on the port).
double exposed_reduction(int tp, double& reduce_s) {
  const models::HardwareConfig hw = models::load_hardware("h100-sxm");
  models::TrainingShape shape;
  shape.tp = tp;
  shape.dp = 2;
  shape.runtime.overlap_grad_reduce = true;
  const sim::Schedule schedule = sim::generate_schedule("1F1B", {2, 2});
  const sim::Topology topology = step::pipeline_topology(hw, shape);
  const double params = 1e9;
  step::ModelStageCosts costs;
  costs.costs.static_bytes = {0, 0};
  for (int stage = 0; stage < 2; ++stage) {
    sim::StageCost cost;
    cost.forward_s = 1;
    cost.backward_input_s = 2;
    cost.send_bytes = static_cast<std::int64_t>(3 * topology.spec(0, 1).bandwidth_bytes_per_s);
    costs.costs.stages.push_back(cost);
    costs.stage_params.push_back({params, 0});
  }
  sim::SimulationReport report;
  report.stage_grads_ready_s = {10, 8};
  report.stage_first_forward_s = {0, 1};
  report.ranks_detail.resize(2);
  report.ranks_detail[0].last_end_s = 10;
  report.ranks_detail[1].last_end_s = 8;
  const std::vector<step::RankPlatform> platforms(2, step::RankPlatform{&hw, shape});
  reduce_s = models::all_reduce_s(shape.gradient_bytes() * params, 2, models::link_for_group(hw, 2, tp));
  return step::overlapped_sync_s(report, schedule, costs, step::StageSplit(std::vector<int>{0, 1, 2}), platforms,
                                 topology);
}

TEST(PortSharing, TheOverlappedReductionSharesThePortWithLaterMessages) {
  // t = 8: the two replicas are on two nodes. Rank 1's port carries its
  // reduction (R, from 8 s) and the 3 s message: done at 11 + R, R + 1
  // past the end. Rank 0's runs from 10 s: R past it.
  double reduce_s = 0;
  const double across = exposed_reduction(8, reduce_s);
  EXPECT_GT(reduce_s, 0);
  EXPECT_NEAR(across, reduce_s + 1, 1e-12);
  // t = 4: both replicas in one node reduce over NVLink, the message goes
  // on the port alone: rank 0 exposes R; rank 1 hides all of its own,
  // slowing the compute beside it by the SMs it holds.
  const double exposed = exposed_reduction(4, reduce_s);
  EXPECT_NEAR(exposed, reduce_s + models::contention_s(reduce_s, models::load_hardware("h100-sxm").gpu), 1e-12);
}

TEST(PortSharing, CrossNodeTensorParallelismReportsThePortItShares) {
  const models::ModelConfig model = models::load_model("gpt3-175b");
  step::PipelineSetup setup;
  setup.shape.seq_len = 2048;
  setup.shape.sequence_parallel = true;
  setup.pp = 4;
  setup.microbatches = 8;
  const models::HardwareConfig hw = models::load_hardware("h100-sxm");
  for (int tp : {8, 16}) {
    setup.shape.tp = tp;
    const step::ModelSimulation run = step::simulate_model(model, hw, setup);
    ASSERT_EQ(run.port_shared_s.size(), 4u);
    const nlohmann::ordered_json json = step::model_simulation_to_json(run);
    if (tp == 8) {
      for (double lost : run.port_shared_s) EXPECT_EQ(lost, 0);
      EXPECT_FALSE(json.contains("port_shared_per_rank_s"));
      continue;
    }
    // Every rank's passes carry messages across nodes beside their TP
    // collectives: each loses time.
    for (double lost : run.port_shared_s) EXPECT_GT(lost, 0);
    EXPECT_EQ(json["port_shared_per_rank_s"].size(), 4u);
  }
}

}  // namespace
}  // namespace pipeplan
