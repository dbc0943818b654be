// A homogeneous cluster read as one hardware description with its fabric.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "common/close_names.h"
#include "common/error.h"
#include "models/cluster.h"

namespace pipeplan::models {

HardwareConfig cluster_hardware(const ClusterConfig& cluster) {
  const NodeGroup& first = cluster.groups.front();
  for (const NodeGroup& group : cluster.groups) {
    if (group.hardware.name != first.hardware.name) {
      std::vector<std::string> kinds;
      for (const NodeGroup& g : cluster.groups) {
        if (std::find(kinds.begin(), kinds.end(), g.hardware.name) == kinds.end()) kinds.push_back(g.hardware.name);
      }
      throw InputError(fmt::format("cluster {}: node_groups mix GPU kinds ({}): `pipeplan plan` takes the cluster "
                                   "whole; elsewhere give one kind's nodes as {}:KIND (e.g. {}:{})",
                                   cluster.name, fmt::join(kinds, ", "), cluster.name, cluster.name, kinds.front()));
    }
    if (group.gpus_per_node != first.gpus_per_node || group.nvlink_domain != first.nvlink_domain ||
        group.nic_bandwidth != first.nic_bandwidth) {
      throw InputError(fmt::format("cluster {}: node_groups {} and {} differ in gpus_per_node, nvlink_domain or "
                                   "nic_bandwidth: a plan takes nodes of one shape; make them agree",
                                   cluster.name, first.name, group.name));
    }
  }
  HardwareConfig hardware = first.hardware;
  hardware.name = cluster.name;
  hardware.aliases.clear();
  hardware.source = cluster.source.empty() ? first.hardware.source
                                           : fmt::format("{}; GPUs: {}", cluster.source, first.hardware.source);
  hardware.nodes = cluster.nodes();
  hardware.gpus_per_node = first.gpus_per_node;
  hardware.nvlink_domain = first.nvlink_domain;
  // NCCL reaches the same share of the cluster's NIC as of the kind's.
  const double share =
      hardware.network.bandwidth > 0 ? hardware.network.collective_bandwidth() / hardware.network.bandwidth : 1.0;
  hardware.network.bandwidth = first.nic_bandwidth;
  hardware.network.bus_bandwidth = hardware.network.bus_bandwidth > 0 ? first.nic_bandwidth * share : 0;
  if (!cluster.tiers.empty()) hardware.network.latency_s = 0;
  hardware.network_tiers = cluster.tiers;
  return hardware;
}

ClusterConfig hardware_as_cluster(const HardwareConfig& hardware, int gpus) {
  ClusterConfig cluster;
  cluster.name = hardware.name;
  cluster.source = hardware.source;
  NodeGroup group;
  group.name = hardware.name;
  group.hardware = hardware;
  group.gpus_per_node = std::max(1, hardware.gpus_per_node);
  group.nodes = hardware.nodes > 0 ? hardware.nodes : std::max(1, (gpus + group.gpus_per_node - 1) / group.gpus_per_node);
  group.nvlink_domain = hardware.nvlink_domain > 0 ? hardware.nvlink_domain : group.gpus_per_node;
  group.nic_bandwidth = hardware.network.bandwidth;
  cluster.groups.push_back(group);
  cluster.tiers = hardware.network_tiers;
  if (cluster.tiers.empty()) cluster.tiers.push_back({"network", 0, 1, hardware.network.latency_s});
  return cluster;
}

ClusterConfig cluster_kind(const ClusterConfig& cluster, const std::string& kind) {
  std::vector<std::string> kinds;
  std::string found;
  for (const NodeGroup& group : cluster.groups) {
    const HardwareConfig& hardware = group.hardware;
    if (std::find(kinds.begin(), kinds.end(), hardware.name) == kinds.end()) kinds.push_back(hardware.name);
    // Its name or an alias, in any case and punctuation, as hardware names are read.
    const bool named = name_key(hardware.name) == name_key(kind) ||
                       std::any_of(hardware.aliases.begin(), hardware.aliases.end(),
                                   [&](const std::string& alias) { return name_key(alias) == name_key(kind); });
    if (named && !kind.empty()) found = hardware.name;
  }
  if (found.empty()) {
    throw InputError(fmt::format("cluster {} has no nodes of kind '{}': name one of its kinds after the colon ({})",
                                 cluster.name, kind, fmt::join(kinds, ", ")));
  }
  ClusterConfig part{cluster.name + ":" + found, cluster.source, {}, cluster.tiers};
  for (const NodeGroup& group : cluster.groups) {
    if (group.hardware.name == found) part.groups.push_back(group);
  }
  return part;
}

HardwareConfig load_platform(const std::string& name_or_path) {
  // CLUSTER:KIND, one kind's nodes of a cluster (a file's path may hold a colon of its own).
  const std::size_t colon = name_or_path.rfind(':');
  std::error_code error;
  if (colon != std::string::npos && !std::filesystem::exists(name_or_path, error)) {
    const std::string cluster = name_or_path.substr(0, colon);
    if (is_cluster_description(cluster)) {
      return cluster_hardware(cluster_kind(load_cluster(cluster), name_or_path.substr(colon + 1)));
    }
  }
  if (is_cluster_description(name_or_path)) return cluster_hardware(load_cluster(name_or_path));
  return load_hardware(name_or_path);
}

}  // namespace pipeplan::models
