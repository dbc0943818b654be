#include "models/reliability.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/units.h"
#include "common/yaml_fields.h"

namespace pipeplan::models {
namespace {

// The Llama 3 paper (Dubey et al., 2024, section 3.3.4): a 54-day snapshot
// of pre-training on 16,384 H100 GPUs, 419 unexpected interruptions, GPU
// issues 58.7 % of them; the Tectonic storage sustains 2 TB/s.
constexpr double kLlama3Days = 54;
constexpr double kLlama3Gpus = 16384;
constexpr double kLlama3GpusPerNode = 8;
constexpr double kLlama3Interruptions = 419;
constexpr double kLlama3GpuShare = 0.587;
constexpr double kLlama3HardwareShare = 0.78;  // confirmed or suspected hardware issues
constexpr double kLlama3StorageBytesPerS = 2e12;
// NVIDIA's DGX H100 datasheet: 2 TB of system memory.
constexpr double kDgxH100HostBytes = 2e12;

void read_rate(const YAML::Node& map, const char* key, const std::string& file, double& out) {
  if (const YAML::Node node = map[key]) out = parse_at(node, file, std::string("reliability.") + key, parse_bandwidth);
}

void read_span(const YAML::Node& map, const char* key, const std::string& file, double& out) {
  if (const YAML::Node node = map[key]) out = parse_at(node, file, std::string("reliability.") + key, parse_lifetime_s);
}

}  // namespace

ReliabilityConfig default_reliability() {
  const double hours = kLlama3Days * 24;
  ReliabilityConfig config;
  config.gpu_mtbf_s = hours * kLlama3Gpus / (kLlama3Interruptions * kLlama3GpuShare) * 3600;
  config.node_mtbf_s =
      hours * (kLlama3Gpus / kLlama3GpusPerNode) / (kLlama3Interruptions * (1 - kLlama3GpuShare)) * 3600;
  config.storage_write_total = config.storage_read_total = kLlama3StorageBytesPerS;
  config.host_memory_per_node = kDgxH100HostBytes;
  config.relaunch_s = 300;
  config.init_s = 60;
  config.warmup_steps = 1;
  config.causes = {{"GPU", kLlama3GpuShare, true},
                   {"other hardware (host, network, memory, storage)", kLlama3HardwareShare - kLlama3GpuShare, true},
                   {"software and other", 1 - kLlama3HardwareShare, false}};
  config.source =
      "Llama 3's 419 unexpected interruptions in 54 days on 16,384 H100s (58.7 % GPU issues, per GPU-hour; the rest "
      "per node-hour; 78 % hardware) and its 2 TB/s storage; restart assumed: 5 min relaunch, 1 min set-up, 1 "
      "warm-up step";
  return config;
}

double ReliabilityConfig::node_out_share() const {
  if (causes.empty()) return 1;
  double share = 0;
  for (const FailureCause& cause : causes) share += cause.takes_node_out ? cause.share : 0;
  return share;
}

namespace {

std::vector<FailureCause> read_causes(const YAML::Node& list, const std::string& file) {
  if (!list.IsSequence()) throw_at(file, list, "reliability.causes is a list: [{name: GPU, share: 58.7%, node_out: true}]");
  std::vector<FailureCause> causes;
  double total = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node entry = list[i];
    const std::string at = fmt::format("reliability.causes[{}]", i);
    if (!entry.IsMap()) throw_at(file, entry, fmt::format("{} is a map: {{name: GPU, share: 58.7%, node_out: true}}", at));
    check_keys(entry, file, at, {"name", "share", "node_out"});
    if (!entry["name"] || !entry["share"]) throw_at(file, entry, fmt::format("{} needs a name and a share", at));
    FailureCause cause{scalar_text(entry["name"], file, at + ".name"),
                       parse_at(entry["share"], file, at + ".share", parse_fraction), true};
    if (entry["node_out"]) {
      const std::string out = scalar_text(entry["node_out"], file, at + ".node_out");
      if (out != "true" && out != "false") throw_at(file, entry["node_out"], at + ".node_out: true or false");
      cause.takes_node_out = out == "true";
    }
    total += cause.share;
    causes.push_back(cause);
  }
  if (total > 1 + 1e-9) {
    throw_at(file, list, fmt::format("reliability.causes: the shares add up to {:.4g}, over 1", total));
  }
  return causes;
}

}  // namespace

void read_reliability(const YAML::Node& node, const std::string& file, ReliabilityConfig& config) {
  if (!node.IsMap()) throw_at(file, node, "reliability is a map: gpu_mtbf, node_mtbf, storage_write, ...");
  check_keys(node, file, "reliability",
             {"source", "gpu_mtbf", "node_mtbf", "storage_write", "storage_read", "storage_write_total",
              "storage_read_total", "host_memory", "relaunch", "init", "warmup_steps", "causes"});
  if (node["causes"]) config.causes = read_causes(node["causes"], file);
  read_span(node, "gpu_mtbf", file, config.gpu_mtbf_s);
  read_span(node, "node_mtbf", file, config.node_mtbf_s);
  for (const char* key : {"gpu_mtbf", "node_mtbf"}) {
    if (node[key] && parse_at(node[key], file, std::string("reliability.") + key, parse_lifetime_s) <= 0) {
      throw_at(file, node[key], fmt::format("reliability.{}: must be above 0; give a time like '50000h'", key));
    }
  }
  read_rate(node, "storage_write", file, config.storage_write_per_node);
  read_rate(node, "storage_read", file, config.storage_read_per_node);
  read_rate(node, "storage_write_total", file, config.storage_write_total);
  read_rate(node, "storage_read_total", file, config.storage_read_total);
  if (const YAML::Node memory = node["host_memory"]) {
    config.host_memory_per_node = static_cast<double>(parse_at(memory, file, "reliability.host_memory", parse_bytes));
  }
  read_span(node, "relaunch", file, config.relaunch_s);
  read_span(node, "init", file, config.init_s);
  if (const YAML::Node steps = node["warmup_steps"]) {
    config.warmup_steps = parse_at(steps, file, "reliability.warmup_steps",
                                   [](std::string_view text, std::string_view field) { return parse_count(text, field, 0); });
  }
  config.source = node["source"] ? scalar_text(node["source"], file, "reliability.source")
                                 : fmt::format("{} (with {}'s own figures)", config.source, file);
}

}  // namespace pipeplan::models
