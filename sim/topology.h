// Links between pipeline ranks. Each direction between two ranks is a
// link that carries one transfer at a time. Ranks may be grouped into
// nodes: traffic between two nodes then shares that node pair's link
// (one per direction), as ranks behind one network port do.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace pipeplan::sim {

struct LinkSpec {
  double latency_s = 0.0;
  double bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();

  double transfer_time_s(std::int64_t bytes) const {
    return latency_s + static_cast<double>(bytes) / bandwidth_bytes_per_s;
  }
};

// Ranks under one switch of a network tier, and the link between nodes
// whose nearest common switch it is.
struct SwitchTier {
  int ranks = 0;
  LinkSpec link;
};

// One rank's place in a fabric of differing nodes (a pipeline across GPU
// kinds): its node, its node's own link, and per tier of `Topology::tiers`
// the switch it hangs from and its port's link through that tier; past the
// last tier, `network`.
struct RankPort {
  int node = 0;
  LinkSpec intra_node;
  std::vector<int> switches;
  std::vector<LinkSpec> tier_links;
  LinkSpec network;
};

// The slower of two ports' links: a transfer runs at the narrower end.
inline LinkSpec slower(const LinkSpec& a, const LinkSpec& b) {
  return {a.latency_s > b.latency_s ? a.latency_s : b.latency_s,
          a.bandwidth_bytes_per_s < b.bandwidth_bytes_per_s ? a.bandwidth_bytes_per_s : b.bandwidth_bytes_per_s};
}

struct Topology {
  LinkSpec intra_node;      // between ranks of one node (all ranks when ranks_per_node == 0)
  LinkSpec inter_node;      // between nodes under no common tier of `tiers`
  int ranks_per_node = 0;   // 0: every rank pair has its own links
  // The network's switches, the narrowest first (each holding more ranks):
  // nodes under one switch talk at that tier's link.
  std::vector<SwitchTier> tiers;
  // Each GPU's copies to and from host memory (PCIe or C2C), each
  // direction a link of its own; none (bandwidth 0) unless the hardware
  // describes one.
  LinkSpec host{0.0, 0.0};
  bool has_host_link() const { return host.bandwidth_bytes_per_s > 0; }

  // Per rank, where the ranks differ (then the fields above are unused
  // but `host`); empty: every rank as described above.
  std::vector<RankPort> ports;

  int node_of(int rank) const {
    return ports.empty() ? rank / ranks_per_node : ports[static_cast<std::size_t>(rank)].node;
  }
  bool same_node(int a, int b) const {
    if (!ports.empty()) return node_of(a) == node_of(b);
    return ranks_per_node <= 0 || a / ranks_per_node == b / ranks_per_node;
  }
  LinkSpec spec(int src, int dst) const {
    if (!ports.empty()) return port_spec(ports[static_cast<std::size_t>(src)], ports[static_cast<std::size_t>(dst)]);
    if (same_node(src, dst)) return intra_node;
    for (const SwitchTier& tier : tiers) {
      if (src / tier.ranks == dst / tier.ranks) return tier.link;
    }
    return inter_node;
  }
  // Identifies the link resource that carries src -> dst traffic.
  std::uint64_t link_key(int src, int dst) const {
    const bool shared = !same_node(src, dst);
    const auto a = static_cast<std::uint64_t>(shared ? node_of(src) : src);
    const auto b = static_cast<std::uint64_t>(shared ? node_of(dst) : dst);
    return (a << 32 | b) << 1 | (shared ? 1u : 0u);
  }

 private:
  static LinkSpec port_spec(const RankPort& src, const RankPort& dst) {
    if (src.node == dst.node) return src.intra_node;
    const std::size_t tiers_shared = src.switches.size() < dst.switches.size() ? src.switches.size() : dst.switches.size();
    for (std::size_t tier = 0; tier < tiers_shared; ++tier) {
      if (src.switches[tier] == dst.switches[tier]) return slower(src.tier_links[tier], dst.tier_links[tier]);
    }
    return slower(src.network, dst.network);
  }
};

}  // namespace pipeplan::sim
