#include "models/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/error.h"

namespace pipeplan::models {
namespace {

constexpr std::array<GroupAxis, 4> kAxes{GroupAxis::kTp, GroupAxis::kCp, GroupAxis::kDp, GroupAxis::kPp};

int size_of(const JobLayout& layout, GroupAxis axis) {
  switch (axis) {
    case GroupAxis::kTp: return layout.tp;
    case GroupAxis::kCp: return layout.cp;
    case GroupAxis::kDp: return layout.dp;
    case GroupAxis::kPp: return layout.pp;
    case GroupAxis::kEp: return layout.ep;
  }
  return 1;
}

// Each GPU of the cluster: its node, its node group and its NVLink domain.
struct GpuSite {
  int node = 0;
  int group = 0;
  int domain = 0;
};

std::vector<GpuSite> gpu_sites(const ClusterConfig& cluster, int gpus) {
  std::vector<GpuSite> sites;
  sites.reserve(static_cast<std::size_t>(gpus));
  int node = 0, domain = 0;
  for (std::size_t g = 0; g < cluster.groups.size() && static_cast<int>(sites.size()) < gpus; ++g) {
    const NodeGroup& group = cluster.groups[g];
    for (int n = 0; n < group.nodes; ++n, ++node) {
      for (int gpu = 0; gpu < group.gpus_per_node; ++gpu) {
        // A domain within a node starts every nvlink_domain GPUs; one made of
        // whole nodes every nvlink_domain / gpus_per_node nodes.
        const bool starts = group.nvlink_domain <= group.gpus_per_node
                                ? gpu % group.nvlink_domain == 0
                                : gpu == 0 && n % (group.nvlink_domain / group.gpus_per_node) == 0;
        if (starts && !sites.empty()) ++domain;
        sites.push_back({node, static_cast<int>(g), domain});
      }
    }
  }
  return sites;
}

// The narrowest tier holding every GPU of `members` (GPU indices).
GroupTier tier_of(const ClusterConfig& cluster, const std::vector<GpuSite>& sites, const std::vector<int>& members) {
  const GpuSite& first = sites[static_cast<std::size_t>(members.front())];
  double link = 0, nic = 0, link_latency = 0;
  bool one_domain = true, one_node = true;
  for (int member : members) {
    const GpuSite& site = sites[static_cast<std::size_t>(member)];
    const NodeGroup& group = cluster.groups[static_cast<std::size_t>(site.group)];
    const double own_link = group.hardware.node_link.bandwidth;
    link = link == 0 ? own_link : std::min(link, own_link);
    nic = nic == 0 ? group.nic_bandwidth : std::min(nic, group.nic_bandwidth);
    link_latency = std::max(link_latency, group.hardware.node_link.latency_s);
    one_domain = one_domain && site.domain == first.domain;
    one_node = one_node && site.node == first.node;
  }
  const bool nvlink = cluster.groups[static_cast<std::size_t>(first.group)].nvlink_domain > 1;
  if (one_domain) return {0, nvlink ? "NVLink" : "PCIe", link, 1, link_latency};
  if (one_node) return {1, "PCIe", link, 1, link_latency};
  GroupTier tier{2, "", nic, 1, 0};
  for (std::size_t i = 0; i < cluster.tiers.size(); ++i) {
    const models::NetworkTier& level = cluster.tiers[i];
    tier.oversubscription = std::max(tier.oversubscription, level.oversubscription);
    tier.latency_s += level.latency_s;
    const int span = level.nodes > 0 ? level.nodes : cluster.nodes();
    const bool held = std::all_of(members.begin(), members.end(), [&](int member) {
      return sites[static_cast<std::size_t>(member)].node / span == first.node / span;
    });
    if (held) {
      tier.level = 2 + static_cast<int>(i);
      tier.name = level.name;
      tier.bandwidth = nic / tier.oversubscription;
      return tier;
    }
  }
  throw std::logic_error("a cluster's last tier holds every node");
}

// Megatron's expert groups (parallel folding): each stage's t x c x d ranks,
// consecutive with pp slowest, renumbered etp-ep-edp; a group is ep ranks
// etp apart within its stage.
std::vector<std::vector<int>> expert_groups(const JobLayout& layout, const RankOrder& order, int gpus) {
  const int etp = layout.expert_tp();
  const int stage = layout.tp * layout.cp * layout.dp;
  if (order.fastest_first.back() != GroupAxis::kPp) {
    throw InputError(fmt::format("--ep {}: experts fold into each stage's t x c x d ranks, which order {} does not "
                                 "keep together; put pp last",
                                 layout.ep, rank_order_name(order)));
  }
  if (stage % (etp * layout.ep) != 0) {
    throw InputError(fmt::format("--ep {} x --etp {} must divide t x c x d = {} (Megatron folds the experts into them)",
                                 layout.ep, etp, stage));
  }
  std::vector<std::vector<int>> groups;
  for (int rank = 0; rank < gpus; ++rank) {
    if (rank % stage / etp % layout.ep != 0) continue;  // each group from its first member
    std::vector<int> members;
    for (int k = 0; k < layout.ep; ++k) members.push_back(rank + k * etp);
    groups.push_back(std::move(members));
  }
  return groups;
}

}  // namespace

std::string_view axis_name(GroupAxis axis) {
  switch (axis) {
    case GroupAxis::kTp: return "tp";
    case GroupAxis::kCp: return "cp";
    case GroupAxis::kDp: return "dp";
    case GroupAxis::kPp: return "pp";
    case GroupAxis::kEp: return "ep";
  }
  return "?";
}

RankOrder parse_rank_order(std::string_view text, std::string_view field) {
  RankOrder order;
  std::vector<GroupAxis> named;
  bool experts = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t dash = std::min(text.find('-', start), text.size());
    const std::string_view word = text.substr(start, dash - start);
    start = dash + 1;
    const auto axis = std::find_if(kAxes.begin(), kAxes.end(), [&](GroupAxis a) { return axis_name(a) == word; });
    const bool repeated = axis != kAxes.end() ? std::find(named.begin(), named.end(), *axis) != named.end()
                                              : word == "ep" && experts;
    if ((axis == kAxes.end() && word != "ep") || repeated) {
      throw InputError(fmt::format("{} '{}': give tp, cp, dp and pp at most once each (ep too), the fastest first "
                                   "and joined by '-' (Megatron's default: tp-cp-ep-dp-pp)",
                                   field, text));
    }
    if (axis == kAxes.end()) {
      experts = true;
    } else {
      named.push_back(*axis);
    }
  }
  if (named.empty()) throw InputError(fmt::format("{} '{}': name at least tp, dp and pp (e.g. tp-cp-dp-pp)", field, text));
  for (GroupAxis axis : kAxes) {
    if (std::find(named.begin(), named.end(), axis) == named.end()) order.omitted.push_back(axis);
  }
  std::copy(named.begin(), named.end(), order.fastest_first.begin());
  std::copy(order.omitted.begin(), order.omitted.end(), order.fastest_first.begin() + static_cast<std::ptrdiff_t>(named.size()));
  return order;
}

std::string rank_order_name(const RankOrder& order) {
  std::string name;
  for (GroupAxis axis : order.fastest_first) {
    if (!name.empty()) name += '-';
    name += axis_name(axis);
  }
  return name;
}

bool parse_megatron_order(std::string_view text, std::string_view field) {
  if (text == megatron_order_name(false)) return false;
  if (text == megatron_order_name(true)) return true;
  throw InputError(fmt::format("{} '{}': give tp-cp-ep-dp-pp (Megatron's default) or tp-pp-dp "
                               "(--use-tp-pp-dp-mapping)",
                               field, text));
}

std::string_view megatron_order_name(bool pipeline_first) { return pipeline_first ? "tp-pp-dp" : "tp-cp-ep-dp-pp"; }

RankOrder megatron_rank_order(bool pipeline_first) {
  return pipeline_first ? RankOrder{{GroupAxis::kTp, GroupAxis::kCp, GroupAxis::kPp, GroupAxis::kDp}, {}} : RankOrder{};
}

Placement place_job(const ClusterConfig& cluster, const JobLayout& layout, const RankOrder& order,
                    bool allow_cross_node_tp) {
  for (GroupAxis axis : kAxes) {
    if (size_of(layout, axis) < 1) {
      throw InputError(fmt::format("--{} must be >= 1 (got {})", axis_name(axis), size_of(layout, axis)));
    }
  }
  if (layout.ep < 1 || layout.etp < 0) {
    throw InputError(fmt::format("--ep must be >= 1 and --etp >= 1 (got {} and {})", layout.ep, layout.etp));
  }
  if (layout.etp > 0 && layout.ep == 1) {
    throw InputError("--etp sizes the experts' tensor parallelism: it applies with --ep > 1");
  }
  const long long gpus = static_cast<long long>(layout.tp) * layout.cp * layout.pp * layout.dp;
  if (gpus > cluster.gpus()) {
    throw InputError(fmt::format("t x c x p x d = {} GPUs, and {} has {}: lower a size", gpus, cluster.name,
                                 cluster.gpus()));
  }
  for (GroupAxis axis : order.omitted) {
    if (size_of(layout, axis) > 1) {
      throw InputError(fmt::format("--order {} leaves out {}, and --{} is {}: name every axis larger than 1",
                                   rank_order_name(order), axis_name(axis), axis_name(axis), size_of(layout, axis)));
    }
  }
  const std::vector<GpuSite> sites = gpu_sites(cluster, static_cast<int>(gpus));
  // A rank's coordinate on each axis, from the order's strides.
  std::map<GroupAxis, int> stride;
  int step = 1;
  for (GroupAxis axis : order.fastest_first) {
    stride[axis] = step;
    step *= size_of(layout, axis);
  }
  const auto coordinate = [&](int rank, GroupAxis axis) { return rank / stride[axis] % size_of(layout, axis); };

  Placement placement;
  for (const GpuSite& site : sites) placement.node_of_rank.push_back(site.node);
  std::vector<std::vector<char>> crosses(static_cast<std::size_t>(gpus));  // per rank, per axis crossing nodes
  // One axis's entry from its groups' members: the widest tier any crosses.
  const auto add_axis = [&](GroupAxis axis, int size, const std::vector<std::vector<int>>& groups) {
    AxisPlacement entry{axis, size, 0, {}, 0};
    for (const std::vector<int>& members : groups) {
      const GroupTier tier = tier_of(cluster, sites, members);
      if (entry.groups == 0 || tier.level > entry.widest.level) {
        entry.widest = tier;
        entry.groups_at_widest = 1;
      } else if (tier.level == entry.widest.level) {
        ++entry.groups_at_widest;
        if (tier.bandwidth < entry.widest.bandwidth) entry.widest = tier;  // the slowest at that tier
      }
      ++entry.groups;
      if (tier.level >= 2) {
        for (int member : members) crosses[static_cast<std::size_t>(member)].push_back(static_cast<char>(axis));
      }
    }
    placement.axes.push_back(entry);
    return entry;
  };
  for (GroupAxis axis : kAxes) {
    const int size = size_of(layout, axis);
    if (size == 1) continue;
    std::vector<std::vector<int>> groups;
    for (int rank = 0; rank < gpus; ++rank) {
      const int at = coordinate(rank, axis);
      // Each group once, from its first member (pp: each stage boundary).
      if (axis == GroupAxis::kPp ? at + 1 >= size : at != 0) continue;
      std::vector<int> members;
      if (axis == GroupAxis::kPp) {
        members = {rank, rank + stride[axis]};
      } else {
        for (int k = 0; k < size; ++k) members.push_back(rank + k * stride[axis]);
      }
      groups.push_back(std::move(members));
    }
    const AxisPlacement entry = add_axis(axis, axis == GroupAxis::kPp ? 2 : size, groups);
    if (axis == GroupAxis::kTp && entry.widest.level > 1 && !allow_cross_node_tp) {
      int local = 0;
      for (const NodeGroup& group : cluster.groups) {
        const int held = std::max(group.nvlink_domain, group.gpus_per_node);
        local = local == 0 ? held : std::min(local, held);
      }
      const std::string why =
          stride[axis] > 1 ? fmt::format("order {} puts a group's ranks {} GPUs apart", rank_order_name(order),
                                         stride[axis])
                           : fmt::format("a node or NVLink domain holds {} GPUs", local);
      throw InputError(fmt::format("--tp {}: its groups would cross {} on {} ({}): put tp first in --order with a "
                                   "--tp dividing {}, or add --allow-cross-node-tp",
                                   layout.tp, entry.widest.name, cluster.name, why, local));
    }
  }
  if (layout.ep > 1) add_axis(GroupAxis::kEp, layout.ep, expert_groups(layout, order, static_cast<int>(gpus)));
  for (const std::vector<char>& axes : crosses) {
    std::vector<char> distinct = axes;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    placement.flows_per_nic = std::max(placement.flows_per_nic, static_cast<int>(distinct.size()));
  }
  placement.stage_nodes.assign(static_cast<std::size_t>(layout.pp), {cluster.nodes(), -1});
  for (int rank = 0; rank < gpus; ++rank) {
    std::array<int, 2>& nodes = placement.stage_nodes[static_cast<std::size_t>(coordinate(rank, GroupAxis::kPp))];
    nodes[0] = std::min(nodes[0], placement.node_of_rank[static_cast<std::size_t>(rank)]);
    nodes[1] = std::max(nodes[1], placement.node_of_rank[static_cast<std::size_t>(rank)]);
  }
  return placement;
}

}  // namespace pipeplan::models
