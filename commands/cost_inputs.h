// Cost and link options as given on the command line or in a costs YAML,
// turned into the simulator's RankCosts and Topology.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "sim/costs.h"
#include "sim/topology.h"

namespace pipeplan::commands {

// Raw texts, each a value or a comma-separated per-rank list, with units.
struct CostInputs {
  std::optional<std::string> tf, tb, tw, tcomm;
  std::optional<std::string> act_bytes, wgrad_bytes, static_bytes, p2p_bytes;
  std::optional<std::string> link_bandwidth, inter_node_bandwidth, inter_node_latency;
  std::optional<std::string> host_bandwidth;  // each rank's host link, for --offload
  std::optional<std::string> tr, recompute_bytes;  // for --recompute-in-bubbles
  std::optional<int> ranks_per_node;
  std::optional<std::string> costs_file;
};

struct ResolvedCosts {
  sim::RankCosts rank_costs;
  sim::Topology topology;
  bool weight_grad_given = false;  // --tw (or tw:) was set
  bool weight_grad_bytes_given = false;  // --wgrad-bytes (or wgrad-bytes:) was set
  bool recompute_given = false;          // --tr or --recompute-bytes (or their keys) was set
  std::string source;              // where the costs came from, for the report
};

// Adds --tf, --tb, --tw, --tcomm, --costs, the byte options and the link
// options to `command`.
void add_cost_options(CLI::App& command, CostInputs& inputs);

// Command-line values override the costs file. With no times at all, the
// built-in default is the 1.5B model of Zero Bubble's Table 9 (p = 8).
// Link options that would change nothing (bytes without a bandwidth, a
// bandwidth without bytes, inter-node links on one node) are refused.
ResolvedCosts resolve_costs(const CostInputs& inputs);

// The keys a costs YAML accepts (the long option names).
std::string costs_yaml_keys();

}  // namespace pipeplan::commands
