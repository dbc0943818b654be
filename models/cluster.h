// A cluster as users get it: node groups that may differ in GPU kind, and
// the network between nodes as tiers of switches. Nodes under one leaf
// switch reach each other at their NICs' full rate; traffic between leaves
// crosses the tier above, whose uplinks may carry less than the leaves'
// ports could send (oversubscription). Read from YAML: the built-in files
// in configs/clusters/ or a user's file.
#pragma once

#include <string>
#include <vector>

#include "models/hardware.h"

namespace pipeplan::models {

struct NodeGroup {
  std::string name;         // "h100"
  HardwareConfig hardware;  // its GPU kind: the hardware file its `hardware` names
  int nodes = 0;
  int gpus_per_node = 8;
  // GPUs that share one NVLink domain: the node's (8), several nodes' (72
  // on a GB200 NVL72 rack of 4-GPU trays) or 1 (PCIe only).
  int nvlink_domain = 8;
  double nic_bandwidth = 0;  // bytes per second per GPU per direction
  int gpus() const { return nodes * gpus_per_node; }
};

struct ClusterConfig {
  std::string name;
  std::string source;
  std::vector<NodeGroup> groups;    // in rank order: group 0's nodes first
  std::vector<NetworkTier> tiers;   // the leaf first, each tier spanning more nodes
  int nodes() const;
  int gpus() const;
  // Whether every group has the same GPU kind.
  bool homogeneous() const;
};

// A built-in name ("dgx-h100-superpod") or a path. Throws InputError (an
// unknown name: lists the known ones) or ParseError (file, line, field:
// a node group whose hardware is unknown, an NVLink domain that neither
// divides a node nor is made of whole nodes, tiers that do not widen).
ClusterConfig load_cluster(const std::string& name_or_path);
ClusterConfig parse_cluster_yaml(const std::string& text, const std::string& source_name);
std::vector<std::string> builtin_cluster_names();

// A cluster of one GPU kind as one hardware description with its fabric:
// its kind's GPU, node links and runtime, with the cluster's node count,
// GPUs per node, NVLink domain, NIC rate and network tiers (whose latencies
// replace the kind's network latency). Throws InputError naming
// node_groups when the groups differ in kind or in node shape.
HardwareConfig cluster_hardware(const ClusterConfig& cluster);
// The other way: one kind's hardware as a cluster of its nodes (as many as
// `gpus` need where it gives no count), its network one tier unless it has
// tiers of its own; where a plan's ranks land is then placed as on any cluster.
ClusterConfig hardware_as_cluster(const HardwareConfig& hardware, int gpus);
// One GPU kind's node groups of a cluster, under the cluster's tiers, named
// CLUSTER:KIND; InputError listing the kinds where it has none of `kind`.
ClusterConfig cluster_kind(const ClusterConfig& cluster, const std::string& kind);
// What --hardware names for a plan or a simulation: a hardware file, a
// cluster of one GPU kind (cluster_hardware), or one kind's nodes of a
// cluster as CLUSTER:KIND ("mixed-h100-a100:h100-sxm").
HardwareConfig load_platform(const std::string& name_or_path);
// Whether the YAML file at `path` (or the built-in of that name) describes
// a cluster (it has node_groups) rather than one kind of hardware.
bool is_cluster_description(const std::string& name_or_path);

}  // namespace pipeplan::models
