// Where a job's ranks land on a cluster (models/cluster.h) and which tier
// of it each communication group crosses. Ranks are numbered as Megatron's
// RankGenerator numbers them: the axes of a rank order, the first varying
// fastest (tp-cp-dp-pp by default: a tensor-parallel group holds
// consecutive ranks), and rank r runs on the cluster's r-th GPU (node groups
// in order, GPUs in order within a node).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "models/cluster.h"
#include "models/job_layout.h"

namespace pipeplan::models {

// kEp: a mixture of experts' expert-parallel groups, folded into each
// stage's t x c x d ranks (no place of its own in a rank order).
enum class GroupAxis { kTp, kCp, kDp, kPp, kEp };
std::string_view axis_name(GroupAxis axis);  // "tp"

struct RankOrder {
  std::array<GroupAxis, 4> fastest_first{GroupAxis::kTp, GroupAxis::kCp, GroupAxis::kDp, GroupAxis::kPp};
  // Axes the text left out (slowest, after the named ones): as in
  // Megatron, each must have size 1.
  std::vector<GroupAxis> omitted;
};
// "tp-cp-dp-pp" (Megatron's default order without experts), any order of
// the four, Megatron's own spellings with "ep" (experts fold into the data-
// parallel ranks, so it places nothing of its own: "tp-cp-ep-dp-pp"), or
// with axes of size 1 left out ("tp-pp-dp"); throws InputError naming
// `field` for anything else.
RankOrder parse_rank_order(std::string_view text, std::string_view field = "--order");
std::string rank_order_name(const RankOrder& order);

// Megatron-LM's two rank orders: its default tp-cp-ep-dp-pp (false) and
// tp-pp-dp (true, --use-tp-pp-dp-mapping); InputError naming `field` for
// any other text.
bool parse_megatron_order(std::string_view text, std::string_view field);
std::string_view megatron_order_name(bool pipeline_first);
// The same order over the four axes place_job knows (experts fold into dp).
RankOrder megatron_rank_order(bool pipeline_first);


// The narrowest part of the cluster that holds a whole group, and what
// one of its GPUs sends at over it.
struct GroupTier {
  // 0: one NVLink domain (or, without NVLink, one GPU's PCIe peers in a
  // node); 1 + i: one switch of network tier i.
  int level = 0;
  std::string name;            // "NVLink", "PCIe", "leaf", "spine"
  double bandwidth = 0;        // per GPU per direction, the slowest member's
  double oversubscription = 1; // of the tiers crossed, the largest (it divides the NIC's rate)
  double latency_s = 0;
};

struct AxisPlacement {
  GroupAxis axis = GroupAxis::kTp;
  int size = 1;          // GPUs per group (pp: the two ranks of a stage boundary)
  int groups = 0;        // groups of this axis (pp: stage boundaries, over all pipelines)
  GroupTier widest;      // the widest tier any of them crosses
  int groups_at_widest = 0;
};

struct Placement {
  std::vector<int> node_of_rank;                 // the cluster's node index
  std::vector<AxisPlacement> axes;               // tp, cp, dp, pp, ep; axes of size 1 left out
  std::vector<std::array<int, 2>> stage_nodes;   // per pipeline stage: its first and last node
  // Axes whose groups cross nodes that each GPU belongs to, at most: the
  // flows sharing one GPU's NIC.
  int flows_per_nic = 0;
};

// Throws InputError when the job needs more GPUs than the cluster has, or
// a tensor-parallel group leaves its NVLink domain without
// `allow_cross_node_tp`.
Placement place_job(const ClusterConfig& cluster, const JobLayout& layout, const RankOrder& order,
                    bool allow_cross_node_tp);

}  // namespace pipeplan::models
