// Placement of a job's ranks on a cluster (models/placement.h), by hand:
// mixed-h100-a100 is 4 H100 nodes then 4 A100 nodes, 8 GPUs each, leaves
// of 4 nodes under a 2:1 spine. t=8 p=4 d=2 in Megatron's order
// (tp-cp-dp-pp): rank r sits on node r / 8, its tp group is its node, its
// dp pair is nodes 2s and 2s + 1 of stage s (one leaf), and stage 1 (nodes
// 2-3, H100) hands over to stage 2 (nodes 4-5, A100) across the spine: the
// slower NIC (200 Gb/s = 25 GB/s) halved by the 2:1 spine, 12.5 GB/s.
#include "models/placement.h"
#include "tests/support/job_layout_support.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "tests/support/cli_support.h"

namespace pipeplan::models {
namespace {

const AxisPlacement& axis_of(const Placement& placement, GroupAxis axis) {
  for (const AxisPlacement& entry : placement.axes) {
    if (entry.axis == axis) return entry;
  }
  throw std::logic_error("no such axis");
}

TEST(Placement, MixedPoolByHand) {
  const ClusterConfig cluster = load_cluster("mixed-h100-a100");
  const Placement placement = place_job(cluster, testing::degrees(8, 1, 4, 2, 1, 0), RankOrder{}, false);
  EXPECT_EQ(placement.node_of_rank[17], 2);
  const AxisPlacement& tp = axis_of(placement, GroupAxis::kTp);
  EXPECT_EQ(tp.widest.name, "NVLink");
  EXPECT_DOUBLE_EQ(tp.widest.bandwidth, 300e9);  // the A100 nodes' NVLink 3, the slower
  const AxisPlacement& dp = axis_of(placement, GroupAxis::kDp);
  EXPECT_EQ(dp.groups, 32);
  EXPECT_EQ(dp.widest.name, "leaf");
  EXPECT_DOUBLE_EQ(dp.widest.bandwidth, 25e9);  // the A100 stages' pairs: HDR 200 Gb/s
  const AxisPlacement& pp = axis_of(placement, GroupAxis::kPp);
  EXPECT_EQ(pp.groups, 48);            // 3 boundaries x 16 pipelines
  EXPECT_EQ(pp.groups_at_widest, 16);  // the boundary between stages 1 and 2
  EXPECT_EQ(pp.widest.name, "spine");
  EXPECT_DOUBLE_EQ(pp.widest.oversubscription, 2);
  EXPECT_DOUBLE_EQ(pp.widest.bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(pp.widest.latency_s, 3e-6);  // leaf 1 us + spine 2 us
  ASSERT_EQ(placement.stage_nodes.size(), 4u);
  EXPECT_EQ(placement.stage_nodes[2], (std::array<int, 2>{4, 5}));
  EXPECT_EQ(placement.flows_per_nic, 2);  // dp and pp leave the node
}

TEST(Placement, TensorParallelismAcrossNodesIsChargedAtTheNetwork) {
  const ClusterConfig superpod = load_cluster("dgx-h100-superpod");
  EXPECT_THROW(place_job(superpod, testing::degrees(16, 1, 1, 1, 1, 0), RankOrder{}, false), InputError);
  const Placement crossing = place_job(superpod, testing::degrees(16, 1, 1, 1, 1, 0), RankOrder{}, true);
  const AxisPlacement& tp = axis_of(crossing, GroupAxis::kTp);
  EXPECT_EQ(tp.widest.name, "leaf");
  EXPECT_DOUBLE_EQ(tp.widest.bandwidth, 50e9);  // NDR 400 Gb/s, against NVLink's 450 GB/s
  // pp fastest instead: a pipeline's 8 stages share a node's NVLink, and
  // each tp group spans 8 nodes (refused unless allowed).
  const RankOrder pp_first = parse_rank_order("pp-tp-cp-dp");
  EXPECT_THROW(place_job(superpod, testing::degrees(8, 1, 8, 1, 1, 0), pp_first, false), InputError);
  const Placement swapped = place_job(superpod, testing::degrees(8, 1, 8, 1, 1, 0), pp_first, true);
  EXPECT_EQ(axis_of(swapped, GroupAxis::kPp).widest.name, "NVLink");
  EXPECT_EQ(axis_of(swapped, GroupAxis::kTp).widest.name, "leaf");
}

TEST(Placement, AnNvl72DomainKeepsLargeTensorParallelGroupsOnNvlink) {
  const ClusterConfig rack = load_cluster("gb200-nvl72");
  for (int tp : {16, 32, 64}) {
    const Placement placement = place_job(rack, testing::degrees(tp, 1, 1, 1, 1, 0), RankOrder{}, false);
    EXPECT_EQ(axis_of(placement, GroupAxis::kTp).widest.name, "NVLink") << tp;
    EXPECT_DOUBLE_EQ(axis_of(placement, GroupAxis::kTp).widest.bandwidth, 900e9) << tp;
  }
}

TEST(Placement, AnOversubscribedSpineDividesTheNicRate) {
  // l40s-pcie-pool: leaves of 8 nodes under a 4:1 spine. d = 16 over
  // 16 nodes (t = 8 fills each) crosses the spine: 25 GB/s / 4.
  const ClusterConfig pool = load_cluster("l40s-pcie-pool");
  const Placement placement = place_job(pool, testing::degrees(8, 1, 1, 16, 1, 0), RankOrder{}, true);
  EXPECT_EQ(axis_of(placement, GroupAxis::kTp).widest.name, "PCIe");
  const AxisPlacement& dp = axis_of(placement, GroupAxis::kDp);
  EXPECT_EQ(dp.widest.name, "spine");
  EXPECT_DOUBLE_EQ(dp.widest.bandwidth, 25e9 / 4);
}

TEST(Placement, BadRequestsGetOneLine) {
  EXPECT_THROW(parse_rank_order("tp-xp-dp-pp"), InputError);
  EXPECT_THROW(parse_rank_order("tp-tp-dp-pp"), InputError);
  EXPECT_THROW(parse_rank_order("tp-ep-ep-dp-pp"), InputError);
  // Megatron's spellings: ep places nothing of its own, axes of size 1 may go unnamed (slowest).
  EXPECT_EQ(rank_order_name(parse_rank_order("tp-cp-ep-dp-pp")), "tp-cp-dp-pp");
  EXPECT_EQ(rank_order_name(parse_rank_order("tp-pp-dp")), "tp-pp-dp-cp");
  testing::expect_refused("hardware place dgx-h100-superpod --tp 8 --cp 2 --pp 2 --order tp-pp-dp",
                          "--order tp-pp-dp-cp leaves out cp, and --cp is 2");
  EXPECT_EQ(rank_order_name(parse_rank_order("pp-dp-cp-tp")), "pp-dp-cp-tp");
  testing::expect_refused("hardware place mixed-h100-a100 --tp 8 --pp 16", "64");
  testing::expect_refused("hardware place gb200-nvl72 --tp 128", "GPUs");
  testing::expect_refused("hardware place dgx-h100-superpod --tp 16", "--allow-cross-node-tp");
  testing::expect_refused("hardware place dgx-h100-superpod --order tp-pp --dp 2", "--order");
  const testing::CommandResult shown = testing::run("hardware place mixed-h100-a100 --tp 8 --pp 4 --dp 2");
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("spine (2:1)"), std::string::npos) << shown.out;
}

}  // namespace
}  // namespace pipeplan::models
