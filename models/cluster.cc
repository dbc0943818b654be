#include "models/cluster.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "common/close_names.h"
#include "common/error.h"
#include "common/units.h"
#include "common/yaml_fields.h"
#include "models/embedded_configs.h"
#include "models/model_limits.h"

namespace pipeplan::models {
namespace {

namespace fs = std::filesystem;

// Oversubscribed tiers run 2:1 to 8:1; a tier over 1000:1 is a typo.
constexpr double kMaxOversubscription = 1000;

// A rate or a duration as a cluster file gives it: with its unit ("400Gb/s",
// "2us"); a bare number would be bytes per second or seconds, never what
// was meant.
template <typename Parse>
double read_with_unit(const YAML::Node& node, const std::string& file, const std::string& field, Parse parse,
                      std::string_view example) {
  const std::string text = scalar_text(node, file, field);
  if (!text.empty() && text.find_first_not_of("0123456789.eE+- ") == std::string::npos) {
    throw_at(file, node, fmt::format("{} {}: give a unit, e.g. {}", field, text, example));
  }
  return parse_at(node, file, field, parse);
}

int read_count(const YAML::Node& map, const std::string& file, const std::string& field, int minimum) {
  return parse_at(map, file, field,
                  [minimum](std::string_view text, std::string_view name) { return parse_count(text, name, minimum); });
}

// A group's hardware: a file next to the cluster file, a path, or a built-in.
HardwareConfig group_hardware(const YAML::Node& node, const std::string& file, const std::string& field) {
  const std::string name = scalar_text(node, file, field);
  const fs::path nearby = fs::path(file).parent_path() / name;
  std::error_code error;
  try {
    if (!fs::path(file).parent_path().empty() && fs::path(name).is_relative() && fs::is_regular_file(nearby, error)) {
      return load_hardware(nearby.string());
    }
    return load_hardware(name);
  } catch (const ParseError&) {
    throw;
  } catch (const InputError& failure) {
    throw_at(file, node, fmt::format("{}: {}", field, failure.what()));
  }
}

NodeGroup read_group(const YAML::Node& node, const std::string& file, std::size_t index) {
  const std::string at = fmt::format("node_groups[{}]", index);
  if (!node.IsMap()) throw_at(file, node, fmt::format("{} is a map with keys name, hardware, nodes, ...", at));
  check_keys(node, file, at, {"name", "hardware", "nodes", "gpus_per_node", "nvlink_domain", "nic_bandwidth"});
  for (const char* key : {"hardware", "nodes"}) {
    if (!node[key]) throw_at(file, node, fmt::format("{} has no '{}'", at, key));
  }
  NodeGroup group;
  group.hardware = group_hardware(node["hardware"], file, at + ".hardware");
  group.name = node["name"] ? scalar_text(node["name"], file, at + ".name") : group.hardware.name;
  group.nodes = read_count(node["nodes"], file, at + ".nodes", 1);
  group.gpus_per_node = node["gpus_per_node"] ? read_count(node["gpus_per_node"], file, at + ".gpus_per_node", 1)
                                              : group.hardware.gpus_per_node;
  group.nvlink_domain = node["nvlink_domain"] ? read_count(node["nvlink_domain"], file, at + ".nvlink_domain", 1)
                                              : group.gpus_per_node;
  const int domain = group.nvlink_domain, per_node = group.gpus_per_node;
  const bool within_node = per_node % domain == 0;
  const bool whole_nodes = domain % per_node == 0 && (domain / per_node) <= group.nodes &&
                           group.nodes % (domain / per_node) == 0;
  if (!within_node && !whole_nodes) {
    throw_at(file, node["nvlink_domain"],
             fmt::format("{}.nvlink_domain {} neither divides a node's {} GPUs nor is made of whole nodes that divide "
                         "the group's {}: give the GPUs one NVLink domain joins (8 for a DGX, 72 for a GB200 NVL72 "
                         "rack, 1 without NVLink)",
                         at, domain, per_node, group.nodes));
  }
  group.nic_bandwidth =
      node["nic_bandwidth"]
          ? read_with_unit(node["nic_bandwidth"], file, at + ".nic_bandwidth", parse_bandwidth, "400Gb/s")
          : group.hardware.network.bandwidth;
  if (!(group.nic_bandwidth > 0)) {
    throw_at(file, node, fmt::format("{}: give nic_bandwidth (per GPU per direction, e.g. 400Gb/s)", at));
  }
  return group;
}

NetworkTier read_tier(const YAML::Node& node, const std::string& file, std::size_t index) {
  const std::string at = fmt::format("network[{}]", index);
  if (!node.IsMap()) throw_at(file, node, fmt::format("{} is a map with keys tier, nodes, oversubscription, latency", at));
  check_keys(node, file, at, {"tier", "nodes", "oversubscription", "latency"});
  if (!node["tier"]) throw_at(file, node, fmt::format("{} has no 'tier' (its name: leaf, spine, ...)", at));
  NetworkTier tier;
  tier.name = scalar_text(node["tier"], file, at + ".tier");
  if (node["nodes"]) tier.nodes = read_count(node["nodes"], file, at + ".nodes", 1);
  if (node["oversubscription"]) {
    const YAML::Node& given = node["oversubscription"];
    // A negative number is below 1 too: say that, not the parser's ">= 0".
    const std::string text = scalar_text(given, file, at + ".oversubscription");
    const bool negative = text.find_first_not_of(' ') != std::string::npos && text[text.find_first_not_of(' ')] == '-';
    tier.oversubscription = negative ? 0 : parse_at(given, file, at + ".oversubscription", parse_non_negative);
    if (tier.oversubscription > kMaxOversubscription) {
      throw_at(file, given,
               fmt::format("{}.oversubscription {} is over {}: no fabric is built that thin (1: non-blocking, 2: 2:1)",
                           at, text, kMaxOversubscription));
    }
    if (tier.oversubscription < 1) {
      throw_at(file, given,
               fmt::format("{}.oversubscription {} is below 1: traffic that crosses this tier runs at the NIC's rate "
                           "over it (1: non-blocking, 2: 2:1)",
                           at, text));
    }
  }
  if (!node["latency"]) {
    throw_at(file, node, fmt::format("{} ({}) has no 'latency': give one crossing of the tier, e.g. 1us", at, tier.name));
  }
  {
    tier.latency_s = read_with_unit(
        node["latency"], file, at + ".latency",
        [](std::string_view text, std::string_view name) { return parse_duration_s(text, name, 1.0); }, "2us");
  }
  return tier;
}

// Each tier spans more nodes than the one below it, and its switches hold
// whole switches of the tier below (the last, spanning every node, may end
// on a part switch: 127 nodes under leaves of 32).
void check_tiers(const ClusterConfig& cluster, const YAML::Node& network, const std::string& file) {
  int below = 1;
  for (std::size_t i = 0; i < cluster.tiers.size(); ++i) {
    const NetworkTier& tier = cluster.tiers[i];
    const int span = tier.nodes > 0 ? tier.nodes : cluster.nodes();
    const bool last = i + 1 == cluster.tiers.size();
    const bool whole = span % below == 0 || (last && tier.nodes == 0);
    if (span <= below || !whole || (!last && tier.nodes == 0)) {
      throw_at(file, network[i],
               fmt::format("network[{}] ({}) spans {}: each tier spans more nodes than the one below ({}) and a "
                           "whole number of its switches; only the last may leave out 'nodes' (every node)",
                           i, tier.name, format_plural(span, "node"), below));
    }
    below = span;
  }
  if (below < cluster.nodes()) {
    throw_at(file, network, fmt::format("the tiers span {} and the node groups have {}: add a tier that joins them "
                                        "all (e.g. '- {{tier: spine, latency: 2us}}')",
                                        format_plural(below, "node"), cluster.nodes()));
  }
}

ClusterConfig read_cluster(const YAML::Node& root, const std::string& file) {
  if (!root.IsMap() || !root["node_groups"]) {
    throw_at(file, root, "a cluster file is a map with keys name, source, node_groups and network, and "
                         "node_groups is required");
  }
  check_keys(root, file, "the cluster file", {"name", "source", "node_groups", "network", "reliability"});
  ClusterConfig cluster;
  cluster.name = root["name"] ? scalar_text(root["name"], file, "name") : fs::path(file).stem().string();
  if (root["source"]) cluster.source = scalar_text(root["source"], file, "source");
  const YAML::Node groups = root["node_groups"];
  if (!groups.IsSequence() || groups.size() == 0) throw_at(file, groups, "node_groups is a list of node groups");
  long long gpus = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    cluster.groups.push_back(read_group(groups[i], file, i));
    const std::string& name = cluster.groups.back().name;
    if (std::count_if(cluster.groups.begin(), cluster.groups.end(), [&](const NodeGroup& g) { return g.name == name; }) > 1) {
      throw_at(file, groups[i], fmt::format("node_groups[{}]: a second group named '{}'; give each its own name", i, name));
    }
    // A kind is its hardware's name: two descriptions under one name would be planned as one.
    const HardwareConfig& kind = cluster.groups.back().hardware;
    for (std::size_t j = 0; j + 1 < cluster.groups.size(); ++j) {
      const GpuSpec& a = cluster.groups[j].hardware.gpu;
      const bool same = a.peak_flops_bf16 == kind.gpu.peak_flops_bf16 && a.memory_bytes == kind.gpu.memory_bytes &&
                        a.memory_bandwidth == kind.gpu.memory_bandwidth &&
                        cluster.groups[j].hardware.node_link.bandwidth == kind.node_link.bandwidth;
      if (cluster.groups[j].hardware.name == kind.name && !same) {
        throw_at(file, groups[i]["hardware"],
                 fmt::format("node_groups[{}].hardware: a description named {} that differs from node_groups[{}]'s "
                             "(GPU rate, memory or links); give it a name of its own",
                             i, kind.name, j));
      }
    }
    gpus += static_cast<long long>(cluster.groups.back().nodes) * cluster.groups.back().gpus_per_node;
    if (gpus > kMaxGpus) {
      throw_at(file, groups[i], fmt::format("node_groups[{}]: the cluster reaches {} GPUs, over {}: check nodes and "
                                            "gpus_per_node",
                                            i, gpus, kMaxGpus));
    }
  }
  // The cluster's failures and storage, over each kind's own.
  if (const YAML::Node reliability = root["reliability"]) {
    for (NodeGroup& group : cluster.groups) read_reliability(reliability, file, group.hardware.reliability);
  }
  const YAML::Node network = root["network"];
  if (!network) {
    if (cluster.nodes() > 1) {
      throw_at(file, root, "the cluster has several nodes and no 'network' tiers: add e.g. 'network: [{tier: leaf}]'");
    }
    return cluster;
  }
  if (!network.IsSequence()) throw_at(file, network, "network is a list of tiers, the leaf first");
  for (std::size_t i = 0; i < network.size(); ++i) {
    cluster.tiers.push_back(read_tier(network[i], file, i));
    const std::string& name = cluster.tiers.back().name;
    if (std::count_if(cluster.tiers.begin(), cluster.tiers.end(), [&](const NetworkTier& t) { return t.name == name; }) > 1) {
      throw_at(file, network[i], fmt::format("network[{}]: a second tier named '{}'; give each its own name (leaf, "
                                             "spine, core)",
                                             i, name));
    }
  }
  check_tiers(cluster, network, file);
  return cluster;
}

ClusterConfig parse_text(const std::string& text, const std::string& file) {
  const YAML::Node root = parse_yaml_text(text, file);
  return read_yaml(file, [&] { return read_cluster(root, file); });
}

}  // namespace

int ClusterConfig::nodes() const {
  return std::accumulate(groups.begin(), groups.end(), 0, [](int sum, const NodeGroup& g) { return sum + g.nodes; });
}

int ClusterConfig::gpus() const {
  return std::accumulate(groups.begin(), groups.end(), 0, [](int sum, const NodeGroup& g) { return sum + g.gpus(); });
}

bool ClusterConfig::homogeneous() const {
  return std::all_of(groups.begin(), groups.end(),
                     [&](const NodeGroup& g) { return g.hardware.name == groups.front().hardware.name; });
}

ClusterConfig parse_cluster_yaml(const std::string& text, const std::string& source_name) {
  return parse_text(text, source_name);
}

ClusterConfig load_cluster(const std::string& name_or_path) {
  std::error_code error;
  if (fs::is_regular_file(name_or_path, error)) {
    const YAML::Node root = load_yaml_file(name_or_path, "the cluster file");
    return read_yaml(name_or_path, [&] { return read_cluster(root, name_or_path); });
  }
  // A built-in by its name in any case and punctuation, as hardware names are read.
  const std::vector<std::string> names = builtin_cluster_names();
  for (const std::string& name : names) {
    if (name_key(name) != name_key(name_or_path)) continue;
    const EmbeddedFile* builtin = find_embedded("clusters", name);
    return parse_text(std::string(builtin->text), fmt::format("configs/clusters/{}.yaml", name));
  }
  throw InputError(fmt::format("unknown cluster '{}': not a file and not a built-in{}; built-ins: {} (or a path to a "
                               "cluster YAML file)",
                               name_or_path, did_you_mean(name_or_path, names), fmt::join(names, ", ")));
}

std::vector<std::string> builtin_cluster_names() { return embedded_names("clusters"); }

bool is_cluster_description(const std::string& name_or_path) {
  std::error_code error;
  if (fs::is_regular_file(name_or_path, error)) {
    try {
      const YAML::Node root = load_yaml_file(name_or_path, "the file");
      return root.IsMap() && root["node_groups"];
    } catch (const std::exception&) {
      return false;  // the hardware reader says what is wrong with it
    }
  }
  const std::vector<std::string> names = builtin_cluster_names();
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return name_key(name) == name_key(name_or_path); });
}

}  // namespace pipeplan::models
