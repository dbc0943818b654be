// Each group costed at the tier of the cluster it crosses (models/time_model.h
// link_for_group, on a cluster read as hardware by models::cluster_hardware):
// hand-worked figures, closed forms, and the placement's own count of tiers
// (models/placement.h) as independent truth for every axis.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"
#include "models/cluster.h"
#include "models/placement.h"
#include "tests/support/job_layout_support.h"
#include "models/time_model.h"
#include "step/stage_costs.h"

namespace pipeplan::models {
namespace {

// 8 GPUs per node on NVLink (400 GB/s, 2 us), 50 GB/s NICs, leaves of 2
// nodes (1 us) under a 2:1 spine (2 us), 8 nodes.
HardwareConfig two_tier_hardware(double spine_oversubscription) {
  HardwareConfig hw;
  hw.name = "two-tier";
  hw.gpu.peak_flops_bf16 = 1e15;
  hw.gpu.memory_bytes = 80'000'000'000;
  hw.gpu.memory_bandwidth = 2e12;
  hw.gpus_per_node = 8;
  hw.nodes = 8;
  hw.node_link = {400e9, 2e-6};
  hw.network = {50e9, 0};
  hw.network_tiers = {{"leaf", 2, 1, 1e-6}, {"spine", 0, spine_oversubscription, 2e-6}};
  return hw;
}

TEST(Fabric, TensorParallelForcedAcrossNodesPaysTheNetwork) {
  // t = 16 spans two nodes of one leaf: each of the 16 ranks sends 15/16 of
  // a 64 MB all-gather at the NIC's 50 GB/s, and 15 steps pay the leaf's 1 us.
  const HardwareConfig hw = two_tier_hardware(2);
  TrainingShape shape;
  shape.tp = 16;
  PassWork pass;
  pass.collectives = {{CollectiveKind::kAllGather, 64e6, 1}};
  const double by_hand = 15.0 / 16 * 64e6 / 50e9 + 15 * 1e-6;
  EXPECT_DOUBLE_EQ(pass_terms(pass, hw, shape).tp_comm_s, by_hand);
  // Within a node the same call runs on NVLink.
  shape.tp = 8;
  EXPECT_DOUBLE_EQ(pass_terms(pass, hw, shape).tp_comm_s, 7.0 / 8 * 64e6 / 400e9 + 7 * 2e-6);
}

TEST(Fabric, OversubscribedSpineSlowsAllReduceAcrossLeavesByItsRatio) {
  // d = 4 replicas one node apart (t = 8) span 4 nodes: two leaves, so the
  // ring crosses the spine. Its bandwidth term doubles at 2:1; the latency
  // (leaf + spine per step) stays.
  const double bytes = 1e9;
  const LinkSpec flat = link_for_group(two_tier_hardware(1), 4, 8);
  const LinkSpec halved = link_for_group(two_tier_hardware(2), 4, 8);
  EXPECT_DOUBLE_EQ(halved.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(halved.latency_s, 3e-6);
  const double latency = 6 * 3e-6;
  EXPECT_DOUBLE_EQ(all_reduce_s(bytes, 4, halved) - latency, 2 * (all_reduce_s(bytes, 4, flat) - latency));
  EXPECT_DOUBLE_EQ(all_reduce_s(bytes, 4, halved), 2.0 * 3 / 4 * bytes / 25e9 + latency);
  // Two replicas (two nodes of one leaf) never reach the spine.
  const LinkSpec leaf = link_for_group(two_tier_hardware(2), 2, 8);
  EXPECT_DOUBLE_EQ(leaf.bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(leaf.latency_s, 1e-6);
}

TEST(Fabric, Nvl72KeepsTensorAndExpertGroupsOf16To64OnNvlink) {
  const HardwareConfig hw = cluster_hardware(load_cluster("gb200-nvl72"));
  EXPECT_EQ(hw.gpus_per_node, 4);
  EXPECT_EQ(hw.local_gpus(), 72);
  for (int size : {16, 32, 64, 72}) {
    SCOPED_TRACE(size);
    EXPECT_TRUE(on_node_link(hw, size));
    EXPECT_DOUBLE_EQ(link_for_group(hw, size, 1).bandwidth, hw.node_link.bandwidth);
    // An all-to-all over `size` experts' ranks: every byte on NVLink.
    const double n = size;
    EXPECT_DOUBLE_EQ(all_to_all_s(1e8, size, 1, hw),
                     1e8 * (n - 1) / n / hw.node_link.collective_bandwidth() + (n - 1) * hw.node_link.latency_s);
  }
  // On 8-GPU nodes the same groups leave the node.
  const HardwareConfig h100 = cluster_hardware(load_cluster("dgx-h100-superpod"));
  EXPECT_FALSE(on_node_link(h100, 16));
  EXPECT_DOUBLE_EQ(link_for_group(h100, 16, 1).bandwidth, h100.network.bandwidth);
}

TEST(Fabric, GroupsStraddlingDomainsAreChargedTheirTier) {
  // 6 GPUs per group on 8-GPU nodes: the second group (GPUs 6-11) spans two
  // nodes, and the third (12-17) two leaves of 16 GPUs: the widest crosses
  // the 2:1 spine.
  const HardwareConfig hw = two_tier_hardware(2);
  EXPECT_FALSE(on_node_link(hw, 6));
  EXPECT_EQ(holding_tier(hw, 6), 1u);
  EXPECT_DOUBLE_EQ(link_for_group(hw, 6, 1).bandwidth, 25e9);
  // 3 nodes of 24 GPUs: the second block (nodes 3-5) straddles two leaves.
  EXPECT_EQ(holding_tier(hw, 24), 1u);
  EXPECT_EQ(holding_tier(hw, 16), 0u);
}

TEST(Fabric, ClusterOfOneKindReadsAsItsHardwareWithTheClustersNetwork) {
  const ClusterConfig cluster = load_cluster("dgx-h100-superpod");
  const HardwareConfig hw = cluster_hardware(cluster);
  const HardwareConfig h100 = load_hardware("h100-sxm");
  EXPECT_EQ(hw.name, "dgx-h100-superpod");
  EXPECT_EQ(hw.nodes, 127);
  EXPECT_DOUBLE_EQ(hw.gpu.peak_flops_bf16, h100.gpu.peak_flops_bf16);
  EXPECT_DOUBLE_EQ(hw.network.bandwidth, 50e9);  // 400 Gb/s
  // NCCL's share of the port, as on the kind's own network.
  EXPECT_DOUBLE_EQ(hw.network.collective_bandwidth() / hw.network.bandwidth,
                   h100.network.collective_bandwidth() / h100.network.bandwidth);
  ASSERT_EQ(hw.network_tiers.size(), 2u);
  EXPECT_DOUBLE_EQ(link_for_span(hw, 64).latency_s, 1e-6);        // 8 nodes: one scalable unit
  EXPECT_DOUBLE_EQ(link_for_span(hw, 8 * 64).latency_s, 3e-6);    // 64 nodes: across the spine
  EXPECT_EQ(load_platform("dgx-h100-superpod").name, "dgx-h100-superpod");
  EXPECT_EQ(load_platform("h100").name, "h100-sxm");
}

TEST(Fabric, MixedClusterIsRefusedNamingItsGroups) {
  try {
    load_platform("mixed-h100-a100");
    FAIL() << "a mixed cluster was read as one kind";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("node_groups mix GPU kinds (h100-sxm, a100-80gb)"), std::string::npos);
  }
}

TEST(Fabric, MegatronsPipelineFirstOrderMovesStagesOntoNvlinkAndReplicasApart) {
  // t=2 p=4 d=16 on a SuperPOD. Default order: stages 32 GPUs (4 nodes)
  // apart over the leaf, the 16 replicas 2 apart (32 GPUs, 4 nodes).
  // tp-pp-dp: stages 2 apart in one node, replicas 8 apart (128 GPUs, 16
  // nodes, one leaf of 32).
  const HardwareConfig hw = cluster_hardware(load_cluster("dgx-h100-superpod"));
  TrainingShape shape;
  shape.tp = 2;
  shape.dp = 16;
  EXPECT_EQ(shape.stage_stride(), 32);
  EXPECT_EQ(shape.replica_stride(), 2);
  EXPECT_DOUBLE_EQ(step::pipeline_topology(hw, shape).spec(0, 1).bandwidth_bytes_per_s, hw.network.bandwidth);
  shape.pipeline_first_ranks = 4;
  EXPECT_EQ(shape.stage_stride(), 2);
  EXPECT_EQ(shape.replica_stride(), 8);
  const sim::Topology topology = step::pipeline_topology(hw, shape);
  for (int k = 0; k + 1 < 4; ++k) EXPECT_DOUBLE_EQ(topology.spec(k, k + 1).bandwidth_bytes_per_s, hw.node_link.bandwidth);
  const LinkSpec replicas = link_for_group(hw, shape.weight_replicas(), shape.replica_stride());
  EXPECT_DOUBLE_EQ(replicas.bandwidth, hw.network.bandwidth);
  EXPECT_DOUBLE_EQ(replicas.latency_s, 1e-6);  // the leaf's
  // The placement agrees: its tp-pp-dp order puts each pipeline in one node.
  const models::Placement placement = models::place_job(load_cluster("dgx-h100-superpod"), testing::degrees(2, 1, 4, 16, 1, 0),
                                                        models::megatron_rank_order(true), false);
  for (const models::AxisPlacement& axis : placement.axes) {
    if (axis.axis == models::GroupAxis::kPp) {
      EXPECT_EQ(axis.widest.name, "NVLink");
    } else if (axis.axis == models::GroupAxis::kDp) {
      EXPECT_EQ(axis.widest.name, "leaf");
    }
  }
}

// The placement counts each group's tier by walking its members; the time
// model's closed form over aligned blocks must agree for every axis of
// every layout that fits (Megatron's order, tp-cp-dp-pp).
void expect_tiers_agree(const std::string& name) {
  const ClusterConfig cluster = load_cluster(name);
  const HardwareConfig hw = cluster_hardware(cluster);
  const std::vector<int> sizes = {1, 2, 4, 8, 16};
  for (int t : {1, 2, 4, 8}) {
    for (int c : {1, 2}) {
      for (int d : sizes) {
        for (int p : {1, 2, 4, 8}) {
          if (static_cast<long long>(t) * c * d * p > cluster.gpus() || !on_node_link(hw, t)) continue;
          SCOPED_TRACE(fmt::format("{} t{} c{} d{} p{}", name, t, c, d, p));
          const models::Placement placement = models::place_job(cluster, testing::degrees(t, c, p, d, 1, 0), {}, false);
          for (const models::AxisPlacement& axis : placement.axes) {
            LinkSpec link;
            if (axis.axis == models::GroupAxis::kPp) {
              TrainingShape shape;
              shape.tp = t;
              shape.cp = c;
              shape.dp = d;
              const sim::Topology topology = step::pipeline_topology(hw, shape);
              // The widest boundary: the hop through the highest level (its node,
              // then each tier of switches).
              const auto level = [&](int k) {
                if (topology.same_node(k, k + 1)) return 0;
                for (std::size_t i = 0; i < topology.tiers.size(); ++i) {
                  if (k / topology.tiers[i].ranks == (k + 1) / topology.tiers[i].ranks) return static_cast<int>(i) + 1;
                }
                return static_cast<int>(topology.tiers.size()) + 1;
              };
              int widest_hop = 0;
              for (int k = 1; k + 1 < p; ++k) {
                if (level(k) > level(widest_hop)) widest_hop = k;
              }
              const sim::LinkSpec widest = topology.spec(widest_hop, widest_hop + 1);
              link = {widest.bandwidth_bytes_per_s, widest.latency_s};
            } else {
              const int stride = axis.axis == models::GroupAxis::kTp   ? 1
                                 : axis.axis == models::GroupAxis::kCp ? t
                                                                       : t * c;
              link = link_for_group(hw, axis.size, stride);
            }
            EXPECT_DOUBLE_EQ(link.bandwidth, axis.widest.bandwidth) << models::axis_name(axis.axis);
            EXPECT_DOUBLE_EQ(link.latency_s, axis.widest.latency_s) << models::axis_name(axis.axis);
          }
        }
      }
    }
  }
}

TEST(Fabric, ExpertGroupsTierMatchesTheAllToAllsLink) {
  // t=8 d=8 on a SuperPOD, experts folded etp=1: ep of 8 stays in a node,
  // ep of 32 spans 4 nodes of one leaf, as the all-to-all's link says.
  const ClusterConfig cluster = load_cluster("dgx-h100-superpod");
  const HardwareConfig hw = cluster_hardware(cluster);
  for (int ep : {8, 32, 64}) {
    SCOPED_TRACE(ep);
    const models::Placement placement = models::place_job(cluster, testing::degrees(8, 1, 2, 8, ep, 1), {}, false);
    const models::AxisPlacement& experts = placement.axes.back();
    ASSERT_EQ(experts.axis, models::GroupAxis::kEp);
    EXPECT_EQ(experts.groups, 2 * 64 / ep);  // per stage: 64 ranks in groups of ep
    const LinkSpec link = link_for_group(hw, ep, 1);
    EXPECT_DOUBLE_EQ(experts.widest.bandwidth, link.bandwidth);
    EXPECT_DOUBLE_EQ(experts.widest.latency_s, link.latency_s);
  }
  EXPECT_THROW(models::place_job(cluster, testing::degrees(8, 1, 2, 8, 3, 1), {}, false), InputError);  // 3 does not divide 64
}

TEST(Fabric, TimeModelTiersMatchThePlacementOnEveryBuiltInClusterOfOneKind) {
  for (const std::string& name : builtin_cluster_names()) {
    if (load_cluster(name).homogeneous()) expect_tiers_agree(name);
  }
}

}  // namespace
}  // namespace pipeplan::models
