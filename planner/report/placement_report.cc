#include "planner/report/placement_report.h"

#include <fmt/format.h>

#include "common/units.h"

namespace pipeplan::planner {
namespace {

std::string tier_text(const models::GroupTier& tier) {
  return tier.oversubscription > 1 ? fmt::format("{} ({:.3g}:1)", tier.name, tier.oversubscription) : tier.name;
}

}  // namespace

std::string node_range(int first, int last) {
  return first == last ? fmt::format("node {}", first) : fmt::format("nodes {}-{}", first, last);
}

std::string node_groups_in(const models::ClusterConfig& cluster, int first, int last) {
  std::string names;
  int start = 0;
  for (const models::NodeGroup& group : cluster.groups) {
    const int end = start + group.nodes - 1;
    if (end >= first && start <= last) names += (names.empty() ? "" : ", ") + group.name;
    start = end + 1;
  }
  return names;
}

std::string placement_text(const models::ClusterConfig& cluster, const models::Placement& placement) {
  std::string text = fmt::format("  {:<5} {:>5} {:>7}  {:<16} {:>14} {:>10}\n", "group", "size", "groups",
                                 "widest tier", "per GPU", "latency");
  for (const models::AxisPlacement& axis : placement.axes) {
    const std::string share =
        axis.groups_at_widest < axis.groups ? fmt::format(" ({} of them)", axis.groups_at_widest) : "";
    text += fmt::format("  {:<5} {:>5} {:>7}  {:<16} {:>14} {:>10}{}\n", models::axis_name(axis.axis), axis.size,
                        axis.groups, tier_text(axis.widest), format_rate(axis.widest.bandwidth),
                        format_micros(axis.widest.latency_s), share);
  }
  text += "  stages:";
  for (std::size_t s = 0; s < placement.stage_nodes.size(); ++s) {
    const auto [first, last] = placement.stage_nodes[s];
    // The node groups only where there are several to tell apart.
    const std::string groups =
        cluster.groups.size() > 1 ? fmt::format(" ({})", node_groups_in(cluster, first, last)) : "";
    text += fmt::format("{} {} {}{}", s == 0 ? "" : ";", s, node_range(first, last), groups);
  }
  text += fmt::format("\n  groups crossing nodes that share each GPU's NIC: {}\n", placement.flows_per_nic);
  return text;
}

nlohmann::ordered_json placement_json(const models::Placement& placement) {
  nlohmann::ordered_json axes = nlohmann::ordered_json::array(), stages = nlohmann::ordered_json::array();
  for (const models::AxisPlacement& axis : placement.axes) {
    axes.push_back({{"axis", models::axis_name(axis.axis)},
                    {"size", axis.size},
                    {"groups", axis.groups},
                    {"widest_tier", axis.widest.name},
                    {"groups_at_widest", axis.groups_at_widest},
                    {"bandwidth_bytes_per_s", axis.widest.bandwidth},
                    {"oversubscription", axis.widest.oversubscription},
                    {"latency_s", axis.widest.latency_s}});
  }
  for (const auto& [first, last] : placement.stage_nodes) stages.push_back({{"first_node", first}, {"last_node", last}});
  return {{"groups", axes},
          {"stages", stages},
          {"flows_per_nic", placement.flows_per_nic},
          {"node_of_rank", placement.node_of_rank}};
}

}  // namespace pipeplan::planner
