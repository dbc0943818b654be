#include "commands/hardware_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "models/cluster.h"
#include "models/hardware.h"
#include "models/placement.h"
#include "planner/report/placement_report.h"

namespace pipeplan::commands {
namespace {

struct ShowOptions {
  std::string hardware;
  bool json = false;
};

struct PlaceOptions {
  std::string cluster;
  models::JobLayout layout;
  std::string order = "tp-cp-dp-pp";
  bool allow_cross_node_tp = false;
  bool json = false;
};

std::string curve(const models::EfficiencyCurve& c, const char* of, const std::string& half) {
  return fmt::format("{:.3g} of {} at most, half of that at {}", c.max_fraction, of, half);
}
std::string gemms(const models::GpuSpec& gpu) {
  std::string tiles;
  for (const models::GemmTile& tile : gpu.gemm_tiles) {
    tiles += fmt::format("{}{}x{}{}", tiles.empty() ? "" : ", ", tile.rows, tile.columns,
                         tile.share < 1 ? fmt::format(" at {:.3g}", tile.share) : "");
  }
  return fmt::format("{:.3g} of peak in full waves, {} per kernel; {}", gpu.matmul.max_fraction,
                     format_micros(gpu.matmul.kernel_overhead_s),
                     gpu.sms > 0 && !tiles.empty() ? fmt::format("tiles {} in waves of {} SMs", tiles, gpu.sms)
                                                   : std::string("no wave quantization (no SMs or tiles given)"));
}
std::string link(const models::LinkSpec& spec) {
  return fmt::format("{} per GPU per direction (collectives at {} bus bandwidth), latency {}", format_rate(spec.bandwidth),
                     format_rate(spec.collective_bandwidth()), format_micros(spec.latency_s));
}

nlohmann::ordered_json hardware_json(const models::HardwareConfig& hw) {
  const models::GpuSpec& gpu = hw.gpu;
  auto efficiency = [](const models::EfficiencyCurve& c) {
    return nlohmann::ordered_json{{"max_fraction", c.max_fraction}, {"half_size", c.half_size}};
  };
  nlohmann::ordered_json tiles = nlohmann::ordered_json::array();
  for (const models::GemmTile& tile : gpu.gemm_tiles) {
    tiles.push_back({{"rows", tile.rows}, {"columns", tile.columns}, {"share", tile.share}});
  }
  auto link = [](const models::LinkSpec& spec) {
    return nlohmann::ordered_json{{"bandwidth_bytes_per_s", spec.bandwidth},
                                  {"latency_s", spec.latency_s},
                                  {"bus_bandwidth_bytes_per_s", spec.collective_bandwidth()}};
  };
  return {{"name", hw.name},
          {"aliases", hw.aliases},
          {"source", hw.source},
          {"gpu",
           {{"peak_flops_bf16", gpu.peak_flops_bf16},
            {"peak_flops_fp32", gpu.peak_flops_fp32},
            {"peak_flops_fp8", gpu.peak_flops_fp8},
            {"memory_bytes", gpu.memory_bytes},
            {"usable_memory_bytes", gpu.usable_memory_bytes()},
            {"memory_bandwidth_bytes_per_s", gpu.memory_bandwidth},
            {"sms", gpu.sms},
            {"gemm_tiles", tiles},
            {"matmul_efficiency",
             {{"max_fraction", gpu.matmul.max_fraction}, {"kernel_overhead_s", gpu.matmul.kernel_overhead_s}}},
            {"attention_efficiency", efficiency(gpu.attention)},
            {"memory_efficiency", efficiency(gpu.memory)}}},
          {"gpus_per_node", hw.gpus_per_node},
          {"node_link", link(hw.node_link)},
          {"network", link(hw.network)},
          {"host_link", {{"bandwidth_bytes_per_s", hw.host_link.bandwidth}, {"latency_s", hw.host_link.latency_s}}},
          {"layer_overhead_s", hw.layer_overhead_s},
          {"pass_overhead_s", hw.pass_overhead_s},
          {"moe_layer_host_s", hw.moe_layer_host_s},
          {"nodes", hw.nodes}};
}

std::string hardware_text(const models::HardwareConfig& hw) {
  const models::GpuSpec& gpu = hw.gpu;
  std::string text = fmt::format("{}{}\n  source: {}\n", hw.name,
                                 hw.aliases.empty() ? "" : fmt::format(" (also {})", fmt::join(hw.aliases, ", ")),
                                 hw.source);
  text += fmt::format("  peak           {:.4g} TFLOP/s bf16, {:.4g} fp32, {:.4g} fp8\n", gpu.peak_flops_bf16 / 1e12,
                      gpu.peak_flops_fp32 / 1e12, gpu.peak_flops_fp8 / 1e12);
  text += fmt::format("  memory         {} ({} usable), {} HBM\n", format_bytes(gpu.memory_bytes),
                      format_bytes(gpu.usable_memory_bytes()), format_rate(gpu.memory_bandwidth));
  text += fmt::format("  GEMMs          {}\n", gemms(gpu));
  text += fmt::format("  attention      {}\n",
                      curve(gpu.attention, "peak", fmt::format("{:.3g} GFLOP per call", gpu.attention.half_size / 1e9)));
  text += fmt::format("  elementwise    {}\n", curve(gpu.memory, "HBM bandwidth", format_bytes(gpu.memory.half_size)));
  text += fmt::format("  node           {} GPUs, {}\n", hw.gpus_per_node, link(hw.node_link));
  text += fmt::format("  network        {}\n", link(hw.network));
  text += fmt::format("  host link      {}\n",
                      hw.host_link.bandwidth > 0 ? fmt::format("{} per GPU per direction, latency {} (offload copies)",
                                                               format_rate(hw.host_link.bandwidth), format_micros(hw.host_link.latency_s))
                                                 : "none described");
  text += fmt::format(
      "  runtime        {} per layer and {} per model chunk, each forward or backward pass, outside "
      "the kernels\n",
      format_duration(hw.layer_overhead_s), format_duration(hw.pass_overhead_s));
  if (hw.moe_layer_host_s > 0) {
    text += fmt::format("                 a mixture-of-experts layer's pass at least {} (the host issuing it after the "
                        "router's sync)\n",
                        format_duration(hw.moe_layer_host_s));
  }
  text += hw.nodes > 0 ? fmt::format("  cluster        {} nodes, {} GPUs\n", hw.nodes, hw.nodes * hw.gpus_per_node)
                       : "  cluster        as many nodes as a plan asks for\n";
  return text;
}

// "4 x h100-sxm" per node group.
std::vector<std::string> group_names(const models::ClusterConfig& cluster) {
  std::vector<std::string> names;
  for (const models::NodeGroup& group : cluster.groups) {
    names.push_back(fmt::format("{} x {}", group.gpus(), group.hardware.name));
  }
  return names;
}

// The switches of tier `level` under nodes [first, last], drawn as a tree
// (at most a few per parent, then how many more).
void draw_tier(const models::ClusterConfig& cluster, int level, int first, int last, const std::string& indent,
               std::string& text) {
  constexpr int kShown = 4;
  const models::NetworkTier& tier = cluster.tiers[static_cast<std::size_t>(level)];
  const int span = tier.nodes > 0 ? tier.nodes : cluster.nodes();
  const int switches = (last - first) / span + 1;
  for (int s = 0; s < switches; ++s) {
    const int from = first + s * span, to = std::min(last, from + span - 1);
    const bool final = s + 1 == switches;
    if (s == kShown && switches > kShown + 1) {
      text += fmt::format("{}└─ ... {} more {} switches\n", indent, switches - kShown, tier.name);
      return;
    }
    text += fmt::format("{}{} {} {}: {} ({})\n", indent, final ? "└─" : "├─", tier.name, from / span,
                        planner::node_range(from, to), planner::node_groups_in(cluster, from, to));
    if (level > 0) draw_tier(cluster, level - 1, from, to, indent + (final ? "   " : "│  "), text);
  }
}

std::string cluster_text(const models::ClusterConfig& cluster) {
  std::string text = fmt::format("{}: {}, {}{}\n  source: {}\n", cluster.name, format_plural(cluster.nodes(), "node"),
                                 format_plural(cluster.gpus(), "GPU"), cluster.homogeneous() ? "" : " of several kinds",
                                 cluster.source.empty() ? "not given" : cluster.source);
  text += "  node groups, in rank order:\n";
  int first = 0;
  for (const models::NodeGroup& group : cluster.groups) {
    const std::string domain = group.nvlink_domain == 1 ? std::string("no NVLink (PCIe between GPUs)")
                                                        : fmt::format("NVLink domains of {} GPUs", group.nvlink_domain);
    text += fmt::format("    {:<8} {:<13} {} x {} {}, {}, NIC {} per GPU\n", group.name,
                        planner::node_range(first, first + group.nodes - 1), group.nodes, group.gpus_per_node,
                        group.hardware.name, domain, format_rate(group.nic_bandwidth));
    first += group.nodes;
  }
  if (cluster.tiers.empty()) return text;
  text += "  network, the leaf first:\n";
  for (const models::NetworkTier& tier : cluster.tiers) {
    text += fmt::format("    {:<8} {}, latency {}, {}\n", tier.name,
                        tier.nodes > 0 ? fmt::format("{} nodes per switch", tier.nodes) : std::string("every node"),
                        format_micros(tier.latency_s),
                        tier.oversubscription > 1 ? fmt::format("{:.3g}:1 oversubscribed", tier.oversubscription)
                                                  : std::string("non-blocking"));
  }
  text += "  tiers:\n";
  const int top = static_cast<int>(cluster.tiers.size()) - 1;
  draw_tier(cluster, top, 0, cluster.nodes() - 1, "    ", text);
  return text;
}

nlohmann::ordered_json cluster_json(const models::ClusterConfig& cluster) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array(), tiers = nlohmann::ordered_json::array();
  for (const models::NodeGroup& group : cluster.groups) {
    groups.push_back({{"name", group.name},
                      {"hardware", group.hardware.name},
                      {"nodes", group.nodes},
                      {"gpus_per_node", group.gpus_per_node},
                      {"nvlink_domain", group.nvlink_domain},
                      {"nic_bandwidth_bytes_per_s", group.nic_bandwidth}});
  }
  for (const models::NetworkTier& tier : cluster.tiers) {
    tiers.push_back({{"tier", tier.name},
                     {"nodes", tier.nodes > 0 ? tier.nodes : cluster.nodes()},
                     {"oversubscription", tier.oversubscription},
                     {"latency_s", tier.latency_s}});
  }
  return {{"name", cluster.name},     {"source", cluster.source}, {"nodes", cluster.nodes()},
          {"gpus", cluster.gpus()},   {"homogeneous", cluster.homogeneous()},
          {"node_groups", groups},    {"network", tiers}};
}

std::string placement_text(const models::ClusterConfig& cluster, const PlaceOptions& options,
                           const models::Placement& placement) {
  const models::JobLayout& l = options.layout;
  const std::string experts = l.ep > 1 ? fmt::format(" ep={} etp={}", l.ep, l.expert_tp()) : "";
  return fmt::format("t={} c={} p={} d={}{} on {} ({} of its {} GPUs), ranks in order {} (the first varies fastest)\n{}",
                     l.tp, l.cp, l.pp, l.dp, experts, cluster.name, l.gpus(), cluster.gpus(), options.order,
                     planner::placement_text(cluster, placement));
}

nlohmann::ordered_json placement_json(const models::ClusterConfig& cluster, const PlaceOptions& options,
                                      const models::Placement& placement) {
  nlohmann::ordered_json json = {{"cluster", cluster.name},   {"order", options.order},
                                 {"tp", options.layout.tp},   {"cp", options.layout.cp},
                                 {"pp", options.layout.pp},   {"dp", options.layout.dp},
                                 {"ep", options.layout.ep},   {"etp", options.layout.expert_tp()}};
  json.update(planner::placement_json(placement));
  return json;
}

}  // namespace

void register_hardware_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("hardware", "The built-in hardware descriptions");
  command->require_subcommand(1);
  command->add_subcommand("list", "List the built-in hardware")->callback([] {
    for (const std::string& name : models::builtin_hardware_names()) {
      const models::HardwareConfig hw = models::load_hardware(name);
      std::cout << fmt::format("{:<20} {:>7.0f} TFLOP/s bf16  {:>10}  {:>7.0f} GB/s HBM  {} GPUs/node{}\n", name,
                               hw.gpu.peak_flops_bf16 / 1e12, format_bytes(hw.gpu.memory_bytes),
                               hw.gpu.memory_bandwidth / 1e9, hw.gpus_per_node,
                               hw.nodes > 0 ? fmt::format(", {} nodes", hw.nodes) : "");
    }
    for (const std::string& name : models::builtin_cluster_names()) {
      const models::ClusterConfig cluster = models::load_cluster(name);
      std::cout << fmt::format("{:<20} cluster: {}, {} ({}), {}\n", name, format_plural(cluster.nodes(), "node"),
                               format_plural(cluster.gpus(), "GPU"), fmt::join(group_names(cluster), " + "),
                               format_plural(static_cast<long long>(cluster.tiers.size()), "network tier"));
    }
  });
  auto options = std::make_shared<ShowOptions>();
  CLI::App* show = command->add_subcommand(
      "show", "A hardware description: peak rates, memory, efficiency curves, node links and network");
  show->add_option("hardware", options->hardware, "Hardware or cluster name, or YAML file")->required();
  show->add_flag("--json", options->json, "Print one JSON object");
  show->callback([options] {
    if (models::is_cluster_description(options->hardware)) {
      const models::ClusterConfig cluster = models::load_cluster(options->hardware);
      std::cout << (options->json ? cluster_json(cluster).dump(2) + "\n" : cluster_text(cluster));
      return;
    }
    const models::HardwareConfig hw = models::load_hardware(options->hardware);
    std::cout << (options->json ? hardware_json(hw).dump(2) + "\n" : hardware_text(hw));
  });
  auto place = std::make_shared<PlaceOptions>();
  CLI::App* placing = command->add_subcommand(
      "place", "Where a job's ranks land on a cluster, and which tier each communication group crosses");
  placing->add_option("cluster", place->cluster, "Cluster name or YAML file")->required();
  placing->add_option("--tp", place->layout.tp, "Tensor-parallel size")->capture_default_str();
  placing->add_option("--cp", place->layout.cp, "Context-parallel size")->capture_default_str();
  placing->add_option("--pp", place->layout.pp, "Pipeline-parallel size")->capture_default_str();
  placing->add_option("--dp", place->layout.dp, "Data-parallel size")->capture_default_str();
  placing->add_option("--ep", place->layout.ep,
                      "Expert-parallel size: ep ranks etp apart within each stage's t x c x d (Megatron's folding)")
      ->capture_default_str();
  placing->add_option("--etp", place->layout.etp, "Expert tensor-parallel size [default: as --tp]");
  placing->add_option("--order", place->order,
                      "Rank order, the fastest-varying axis first (Megatron's RankGenerator order)")
      ->capture_default_str();
  placing->add_flag("--allow-cross-node-tp", place->allow_cross_node_tp,
                    "Let a tensor-parallel group leave its NVLink domain");
  placing->add_flag("--json", place->json, "Print one JSON object");
  placing->callback([place] {
    const models::ClusterConfig cluster = models::load_cluster(place->cluster);
    const models::Placement placement =
        models::place_job(cluster, place->layout, models::parse_rank_order(place->order), place->allow_cross_node_tp);
    std::cout << (place->json ? placement_json(cluster, *place, placement).dump(2) + "\n"
                              : placement_text(cluster, *place, placement));
  });
}

}  // namespace pipeplan::commands
