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

struct NetworkTier {
  std::string name;             // "leaf", "spine"
  int nodes = 0;                // nodes under one switch of this tier; 0: every node
  double oversubscription = 1;  // what the switches below could send over what its uplinks carry, >= 1
  double latency_s = 0;         // one crossing of this tier
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
// Whether the YAML file at `path` (or the built-in of that name) describes
// a cluster (it has node_groups) rather than one kind of hardware.
bool is_cluster_description(const std::string& name_or_path);

}  // namespace pipeplan::models
