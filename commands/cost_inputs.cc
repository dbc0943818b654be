#include "commands/cost_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "common/error.h"
#include "common/units.h"
#include "common/yaml_fields.h"

namespace pipeplan::commands {
namespace {

constexpr double kMillisecond = 1e-3;

// Zero Bubble (Qi et al. 2024), Table 9, 1.5B model, p = 8: measured per
// micro-batch stage times in ms.
constexpr std::string_view kDefaultTf = "18.522";
constexpr std::string_view kDefaultTb = "18.086";
constexpr std::string_view kDefaultTw = "9.337";
constexpr std::string_view kDefaultTcomm = "0.601";

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

template <typename T>
std::vector<T> parse_list(const std::string& text, std::string_view option,
                          const std::function<T(std::string_view, std::string_view)>& parse) {
  std::vector<T> values;
  for (const std::string& item : split_list(text)) values.push_back(parse(item, option));
  return values;
}

std::vector<double> parse_times(const std::string& text, std::string_view option) {
  return parse_list<double>(text, option, [](std::string_view item, std::string_view name) {
    return parse_duration_s(item, name, kMillisecond);
  });
}

std::vector<std::int64_t> parse_sizes(const std::string& text, std::string_view option) {
  return parse_list<std::int64_t>(text, option, parse_bytes);
}

struct YamlKey {
  std::string_view name;
  std::optional<std::string> CostInputs::*field;
};

constexpr std::array<YamlKey, 14> kYamlKeys{{
    {"tf", &CostInputs::tf},
    {"tb", &CostInputs::tb},
    {"tw", &CostInputs::tw},
    {"tcomm", &CostInputs::tcomm},
    {"act-bytes", &CostInputs::act_bytes},
    {"wgrad-bytes", &CostInputs::wgrad_bytes},
    {"static-bytes", &CostInputs::static_bytes},
    {"p2p-bytes", &CostInputs::p2p_bytes},
    {"link-bandwidth", &CostInputs::link_bandwidth},
    {"inter-node-bandwidth", &CostInputs::inter_node_bandwidth},
    {"inter-node-latency", &CostInputs::inter_node_latency},
    {"host-bandwidth", &CostInputs::host_bandwidth},
    {"tr", &CostInputs::tr},
    {"recompute-bytes", &CostInputs::recompute_bytes},
}};

// A link's rate: a plain number is bytes per second, so one below 1 MB/s
// is a unit left out ("100" meant 100 GB/s), refused as --memory-cap's is.
double link_rate(const std::string& text, std::string_view option) {
  const double rate = parse_bandwidth(text, option);
  if (rate > 0 && rate < 1e6) {
    throw InputError(fmt::format("{} {} is {:.4g} bytes/s: give a unit, e.g. 50GB/s or 400Gb/s", option, text, rate));
  }
  return rate;
}

std::string normalise_key(std::string key) {
  for (char& c : key) {
    if (c == '_') c = '-';
  }
  return key;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

// Fills the fields the command line left empty from the costs file.
void merge_root(const YAML::Node& root, const std::string& path, CostInputs& inputs) {
  if (!root.IsMap()) throw_at(path, root, "a costs file is a map of option names to values, e.g. 'tf: 10'");
  for (const auto& entry : root) {
    const std::string key = normalise_key(entry.first.as<std::string>());
    if (key == "ranks-per-node") {
      const std::string text = scalar_text(entry.second, path, key);
      if (!inputs.ranks_per_node) inputs.ranks_per_node = static_cast<int>(parse_non_negative(text, key));
      continue;
    }
    const auto match = std::find_if(kYamlKeys.begin(), kYamlKeys.end(),
                                    [&](const YamlKey& known) { return known.name == key; });
    if (match == kYamlKeys.end()) {
      throw_at(path, entry.first, fmt::format("unknown key '{}'; known keys: {}", key, costs_yaml_keys()));
    }
    std::optional<std::string>& field = inputs.*(match->field);
    if (!field) field = join(scalar_or_list(entry.second, path, key));
  }
}

void merge_yaml(const std::string& path, CostInputs& inputs) {
  const YAML::Node root = load_yaml_file(path, "--costs");
  read_yaml(path, [&] { merge_root(root, path, inputs); });
}

// Link options that would change nothing are refused: bytes over unlimited
// bandwidth cost nothing, bandwidth carries no bytes, without
// --ranks-per-node every rank is on one node, and nodes over links whose
// transfers take no time share nothing.
void check_link_options(const CostInputs& inputs, const ResolvedCosts& resolved) {
  if ((inputs.inter_node_bandwidth || inputs.inter_node_latency) && resolved.topology.ranks_per_node == 0) {
    throw InputError("--inter-node-bandwidth and --inter-node-latency need --ranks-per-node: without it every rank is "
                     "on one node");
  }
  const auto& bytes = resolved.rank_costs.send_bytes;
  const bool sends = std::any_of(bytes.begin(), bytes.end(), [](std::int64_t b) { return b > 0; });
  if ((inputs.link_bandwidth || inputs.inter_node_bandwidth) && !sends) {
    throw InputError("a link bandwidth carries --p2p-bytes: give the bytes sent per micro-batch too, or drop it");
  }
  const bool limited = std::isfinite(resolved.topology.intra_node.bandwidth_bytes_per_s) ||
                       std::isfinite(resolved.topology.inter_node.bandwidth_bytes_per_s);
  const bool latent = resolved.topology.intra_node.latency_s > 0 || resolved.topology.inter_node.latency_s > 0;
  if (resolved.topology.ranks_per_node > 0 && !latent && !(sends && limited)) {
    throw InputError("--ranks-per-node: every transfer takes no time here (no --tcomm, --inter-node-latency or "
                     "--p2p-bytes over a bandwidth), so which ranks share a node changes nothing; give link costs "
                     "or drop it");
  }
  if (sends && !limited) {
    throw InputError("--p2p-bytes cost nothing over links of unlimited bandwidth: give --link-bandwidth too, or drop "
                     "it");
  }
}

}  // namespace

void add_cost_options(CLI::App& command, CostInputs& inputs) {
  command.add_option("--tf", inputs.tf,
                     "Forward time per micro-batch per rank, ms (one value or a comma list per rank; units like "
                     "'1.2ms', '800us' accepted) [default: Zero Bubble's 1.5B model, 18.522]");
  command.add_option("--tb", inputs.tb,
                     "Backward time per micro-batch per rank, ms: the input-gradient part (B in Zero Bubble); "
                     "schedules without a B/W split run tb + tw [default 18.086]");
  command.add_option("--tw", inputs.tw,
                     "Weight-gradient backward time per micro-batch per rank, ms; required by split schedules "
                     "(ZBH1, ZBH2, ZBV, ...) [default 9.337 with the built-in times, else 0]");
  command.add_option("--tcomm", inputs.tcomm,
                     "Latency of one stage-to-stage transfer, ms [default 0.601 with the built-in times, else 0]");
  command.add_option("--costs", inputs.costs_file,
                     "Costs YAML with the same keys as these options (tf, tb, tw, tcomm, act-bytes, ...); options "
                     "given on the command line win");
  command.add_option("--act-bytes", inputs.act_bytes,
                     "Activation bytes a forward keeps for the backward (M_B), per micro-batch per rank, e.g. "
                     "'1.5GiB' [default 0]");
  command.add_option("--wgrad-bytes", inputs.wgrad_bytes,
                     "Of --act-bytes, bytes kept after I until W (M_W), per micro-batch per rank [default 0]");
  command.add_option("--static-bytes", inputs.static_bytes,
                     "Static bytes per rank: weights, gradients, optimizer state [default 0]");
  command.add_option("--p2p-bytes", inputs.p2p_bytes,
                     "Bytes sent stage to stage per micro-batch (activation forward, gradient backward) "
                     "[default 0]");
  command.add_option("--link-bandwidth", inputs.link_bandwidth,
                     "Bandwidth of each link between ranks, e.g. '450GB/s' or '400Gb/s' [default unlimited]");
  command.add_option("--ranks-per-node", inputs.ranks_per_node,
                     "Ranks per node; traffic between two nodes shares one link per direction [default 0: one "
                     "node]");
  command.add_option("--inter-node-bandwidth", inputs.inter_node_bandwidth,
                     "Bandwidth between nodes [default: --link-bandwidth]");
  command.add_option("--inter-node-latency", inputs.inter_node_latency,
                     "Latency between nodes, ms [default: --tcomm]");
  command.add_option("--host-bandwidth", inputs.host_bandwidth,
                     "With --offload: each rank's link to host memory per direction, e.g. '50GB/s'");
  command.add_option("--tr", inputs.tr,
                     "With --recompute-in-bubbles: of --tb, the recomputed forward's time per micro-batch per "
                     "rank, ms (activation checkpointing)");
  command.add_option("--recompute-bytes", inputs.recompute_bytes,
                     "With --recompute-in-bubbles: the activations the recomputation brings back per micro-batch "
                     "per rank, held until its backward ends, e.g. '2GiB'");
}

std::string costs_yaml_keys() {
  std::string keys;
  for (const YamlKey& key : kYamlKeys) keys += std::string(key.name) + ", ";
  return keys + "ranks-per-node";
}

ResolvedCosts resolve_costs(const CostInputs& given) {
  CostInputs inputs = given;
  ResolvedCosts resolved;
  resolved.source = "command line";
  if (inputs.costs_file) {
    merge_yaml(*inputs.costs_file, inputs);
    resolved.source = *inputs.costs_file;
  }
  if (!inputs.tf && !inputs.tb && !inputs.tw) {
    inputs.tf = kDefaultTf;
    inputs.tb = kDefaultTb;
    inputs.tw = kDefaultTw;
    if (!inputs.tcomm) inputs.tcomm = kDefaultTcomm;
    resolved.source = "built-in default: Zero Bubble Table 9, 1.5B model (tf 18.522, tb 18.086, tw 9.337, "
                      "tcomm 0.601 ms)";
  }
  if (!inputs.tf) throw InputError("--tf (forward time per micro-batch, ms) is required when --tb or --tw is given");
  if (!inputs.tb) throw InputError("--tb (backward time per micro-batch, ms) is required when --tf is given");
  sim::RankCosts& costs = resolved.rank_costs;
  costs.forward_s = parse_times(*inputs.tf, "--tf");
  costs.backward_input_s = parse_times(*inputs.tb, "--tb");
  resolved.weight_grad_given = inputs.tw.has_value();
  if (inputs.tw) costs.backward_weight_s = parse_times(*inputs.tw, "--tw");
  if (inputs.act_bytes) costs.activation_bytes = parse_sizes(*inputs.act_bytes, "--act-bytes");
  if (inputs.wgrad_bytes) costs.weight_grad_bytes = parse_sizes(*inputs.wgrad_bytes, "--wgrad-bytes");
  if (inputs.static_bytes) costs.static_bytes = parse_sizes(*inputs.static_bytes, "--static-bytes");
  if (inputs.p2p_bytes) costs.send_bytes = parse_sizes(*inputs.p2p_bytes, "--p2p-bytes");
  if (inputs.tr) costs.recompute_s = parse_times(*inputs.tr, "--tr");
  if (inputs.recompute_bytes) costs.recompute_bytes = parse_sizes(*inputs.recompute_bytes, "--recompute-bytes");
  resolved.recompute_given = inputs.tr || inputs.recompute_bytes;

  sim::Topology& topology = resolved.topology;
  if (inputs.tcomm) topology.intra_node.latency_s = parse_duration_s(*inputs.tcomm, "--tcomm", kMillisecond);
  if (inputs.link_bandwidth) {
    topology.intra_node.bandwidth_bytes_per_s = link_rate(*inputs.link_bandwidth, "--link-bandwidth");
  }
  if (inputs.ranks_per_node) {
    if (*inputs.ranks_per_node < 0) throw InputError("--ranks-per-node must be >= 0 (0: one node)");
    topology.ranks_per_node = *inputs.ranks_per_node;
  }
  topology.inter_node = topology.intra_node;
  if (inputs.inter_node_bandwidth) {
    topology.inter_node.bandwidth_bytes_per_s = link_rate(*inputs.inter_node_bandwidth, "--inter-node-bandwidth");
  }
  if (inputs.inter_node_latency) {
    topology.inter_node.latency_s = parse_duration_s(*inputs.inter_node_latency, "--inter-node-latency", kMillisecond);
  }
  if (inputs.host_bandwidth) {
    topology.host = {0.0, link_rate(*inputs.host_bandwidth, "--host-bandwidth")};
  }
  for (const sim::LinkSpec* link : {&topology.intra_node, &topology.inter_node}) {
    if (link->bandwidth_bytes_per_s <= 0) throw InputError("link bandwidths must be > 0");
  }
  check_link_options(inputs, resolved);
  resolved.weight_grad_bytes_given = inputs.wgrad_bytes.has_value();
  return resolved;
}

}  // namespace pipeplan::commands
