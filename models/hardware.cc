#include "models/hardware.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "common/close_names.h"
#include "common/error.h"
#include "common/units.h"
#include "common/yaml_fields.h"
#include "models/embedded_configs.h"

namespace pipeplan::models {
namespace {

namespace fs = std::filesystem;
// A `base` chain longer than this is taken for a cycle (a file naming
// itself, or two files naming each other).
constexpr int kMaxBaseDepth = 8;

// Sets `out` from `map[key]` when the key is present: a file that names a
// base overrides only what it gives.
template <typename T, typename Parse>
void read(const YAML::Node& map, const char* key, const std::string& file, const std::string& section, T& out,
          Parse parse) {
  const YAML::Node node = map[key];
  if (node) out = static_cast<T>(parse_at(node, file, section + "." + key, parse));
}

// FLOP/s with an optional decimal prefix: "989TFLOP/s", "2.25PFLOP/s",
// "989e12". Checked longest first, as "FLOP/s" ends every other suffix.
double parse_flops(std::string_view text, std::string_view field) {
  static constexpr std::array<std::pair<std::string_view, double>, 8> kSuffixes{{
      {"PFLOP/s", 1e15}, {"TFLOP/s", 1e12}, {"GFLOP/s", 1e9}, {"PFLOPS", 1e15},
      {"TFLOPS", 1e12},  {"GFLOPS", 1e9},   {"FLOP/s", 1.0},  {"FLOPS", 1.0},
  }};
  std::string_view number = text;
  double scale = 1.0;
  for (const auto& [suffix, suffix_scale] : kSuffixes) {
    if (text.ends_with(suffix)) {
      number = text.substr(0, text.size() - suffix.size());
      scale = suffix_scale;
      break;
    }
  }
  double rate = 0;
  try {
    rate = parse_non_negative(number, field) * scale;
  } catch (const InputError&) {
    throw InputError(fmt::format("{}: '{}' is not a rate >= 0; write it like '989TFLOP/s' or '989e12' (units "
                                 "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s)",
                                 field, text));
  }
  // 10^18 FLOP/s: over 60 times the densest GPU's 4-bit rate (B300, 15 PFLOP/s).
  if (rate > 1e18) {
    throw InputError(fmt::format("{}: '{}' is over the limit of 1000PFLOP/s, past any GPU; write it like '989TFLOP/s'",
                                 field, text));
  }
  return rate;
}

double parse_seconds(std::string_view text, std::string_view field) {
  return parse_duration_s(text, field, 1.0);  // a plain number is in seconds
}

// A share of peak: above 0, at most all of it.
void check_ceiling(const YAML::Node& node, const std::string& file, const std::string& section, double share) {
  if (share <= 0 || share > 1) {
    throw_at(file, node["max"] ? node["max"] : node,
             fmt::format("{}.max: {} is outside (0, 1]; give the fraction of peak reached, e.g. 0.8", section, share));
  }
}

template <typename ParseHalf>
void read_curve(const YAML::Node& map, const char* key, const std::string& file, EfficiencyCurve& curve,
                ParseHalf parse_half) {
  const YAML::Node node = map[key];
  if (!node) return;
  const std::string section = std::string("gpu.efficiency.") + key;
  check_keys(node, file, section, {"max", "half_size"});
  read(node, "max", file, section, curve.max_fraction, parse_fraction);
  read(node, "half_size", file, section, curve.half_size, parse_half);
  check_ceiling(node, file, section, curve.max_fraction);
}

void read_matmul(const YAML::Node& node, const std::string& file, MatmulSpec& matmul) {
  const std::string section = "gpu.efficiency.matmul";
  if (node["half_size"]) {
    throw_at(file, node["half_size"],
             section + ".half_size: GEMMs are timed by their shape now; give the fixed cost of one GEMM kernel "
                       "as kernel_overhead (e.g. 4us) instead");
  }
  check_keys(node, file, section, {"max", "kernel_overhead", "fp8_max"});
  read(node, "max", file, section, matmul.max_fraction, parse_fraction);
  read(node, "fp8_max", file, section, matmul.fp8_max_fraction, parse_fraction);
  if (matmul.fp8_max_fraction > 1) {
    throw_at(file, node["fp8_max"], section + ".fp8_max: above 1; give the share of the FP8 peak reached, e.g. 0.7");
  }
  read(node, "kernel_overhead", file, section, matmul.kernel_overhead_s, parse_seconds);
  if (matmul.kernel_overhead_s > 1e-3) {
    throw_at(file, node["kernel_overhead"], section + ".kernel_overhead: over 1 ms for one GEMM launch; give the "
                                                      "fixed cost of a kernel, e.g. 4us");
  }
  check_ceiling(node, file, section, matmul.max_fraction);
}

void read_efficiency(const YAML::Node& node, const std::string& file, GpuSpec& gpu) {
  check_keys(node, file, "gpu.efficiency", {"matmul", "attention", "memory"});
  if (const YAML::Node matmul = node["matmul"]) read_matmul(matmul, file, gpu.matmul);
  read_curve(node, "attention", file, gpu.attention, parse_non_negative);  // FLOPs of one call
  read_curve(node, "memory", file, gpu.memory, parse_bytes);  // bytes moved by one kernel
}

// `gemm_tiles: [{rows: 128, columns: 256}, {rows: 128, columns: 128, share: 0.9}]`
std::vector<GemmTile> read_tiles(const YAML::Node& node, const std::string& file) {
  if (!node.IsSequence() || node.size() == 0) {
    throw_at(file, node, "gpu.gemm_tiles: give a list of tiles, e.g. [{rows: 128, columns: 256}]");
  }
  const auto dimension = [](std::string_view text, std::string_view field) { return parse_count(text, field, 1); };
  std::vector<GemmTile> tiles;
  for (const YAML::Node& item : node) {
    const std::string section = fmt::format("gpu.gemm_tiles[{}]", tiles.size());
    check_keys(item, file, section, {"rows", "columns", "share"});
    if (!item["rows"] || !item["columns"]) throw_at(file, item, section + ": give rows and columns");
    GemmTile tile;
    read(item, "rows", file, section, tile.rows, dimension);
    read(item, "columns", file, section, tile.columns, dimension);
    // Thread-block tiles of every GPU GEMM library: multiples of 8, at most 1024.
    for (const auto& [key, size] : {std::pair{"rows", tile.rows}, std::pair{"columns", tile.columns}}) {
      if (size % 8 != 0 || size > 1024) {
        throw_at(file, item[key], fmt::format("{}.{}: {} is not a GEMM tile size; give a multiple of 8 up to 1024, "
                                              "e.g. 128",
                                              section, key, size));
      }
    }
    read(item, "share", file, section, tile.share, parse_fraction);
    if (tile.share <= 0 || tile.share > 1) {
      throw_at(file, item["share"], section + ".share: give the share of the matmul ceiling in (0, 1], e.g. 0.9");
    }
    tiles.push_back(tile);
  }
  return tiles;
}

// "5%" of memory, or a size ("2GiB"); the one given replaces the other.
void read_reserved(const YAML::Node& node, const std::string& file, GpuSpec& gpu) {
  const std::string text = scalar_text(node, file, "gpu.reserved");
  if (text.ends_with('%')) {
    gpu.reserved_fraction = parse_at(node, file, "gpu.reserved", parse_fraction);
    gpu.reserved_bytes = 0;
    if (gpu.reserved_fraction >= 1) throw_at(file, node, "gpu.reserved: must be below 100% of memory");
  } else {
    gpu.reserved_bytes = parse_at(node, file, "gpu.reserved", parse_bytes);
    gpu.reserved_fraction = 0;
  }
}

void read_gpu(const YAML::Node& node, const std::string& file, GpuSpec& gpu) {
  check_keys(node, file, "gpu",
             {"peak_flops", "memory", "memory_bandwidth", "sms", "collective_sms", "gemm_tiles", "efficiency",
              "reserved"});
  if (const YAML::Node peak = node["peak_flops"]) {
    check_keys(peak, file, "gpu.peak_flops", {"bf16", "fp32", "fp8"});
    read(peak, "bf16", file, "gpu.peak_flops", gpu.peak_flops_bf16, parse_flops);
    read(peak, "fp32", file, "gpu.peak_flops", gpu.peak_flops_fp32, parse_flops);
    read(peak, "fp8", file, "gpu.peak_flops", gpu.peak_flops_fp8, parse_flops);
  }
  read(node, "memory", file, "gpu", gpu.memory_bytes, parse_bytes);
  read(node, "memory_bandwidth", file, "gpu", gpu.memory_bandwidth, parse_bandwidth);
  read(node, "sms", file, "gpu", gpu.sms,
       [](std::string_view text, std::string_view field) { return parse_count(text, field, 1); });
  read(node, "collective_sms", file, "gpu", gpu.collective_sms,
       [](std::string_view text, std::string_view field) { return parse_count(text, field, 0); });
  if (const YAML::Node tiles = node["gemm_tiles"]) gpu.gemm_tiles = read_tiles(tiles, file);
  if (const YAML::Node efficiency = node["efficiency"]) read_efficiency(efficiency, file, gpu);
  if (const YAML::Node reserved = node["reserved"]) read_reserved(reserved, file, gpu);
}

bool parse_yes_no(std::string_view text, std::string_view field) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw InputError(fmt::format("{}: '{}' is not true or false", field, text));
}

void read_node(const YAML::Node& node, const std::string& file, HardwareConfig& config) {
  check_keys(node, file, "node", {"gpus", "link_bandwidth", "link_latency", "bus_bandwidth", "nvlink"});
  read(node, "nvlink", file, "node", config.node_nvlink, parse_yes_no);
  read(node, "gpus", file, "node", config.gpus_per_node,
       [](std::string_view text, std::string_view field) { return parse_count(text, field, 1); });
  read(node, "link_bandwidth", file, "node", config.node_link.bandwidth, parse_bandwidth);
  read(node, "link_latency", file, "node", config.node_link.latency_s, parse_seconds);
  read(node, "bus_bandwidth", file, "node", config.node_link.bus_bandwidth, parse_bandwidth);
}

void read_host_link(const YAML::Node& node, const std::string& file, LinkSpec& host) {
  check_keys(node, file, "host_link", {"bandwidth", "latency"});
  read(node, "bandwidth", file, "host_link", host.bandwidth, parse_bandwidth);
  read(node, "latency", file, "host_link", host.latency_s, parse_seconds);
}

void read_network(const YAML::Node& node, const std::string& file, HardwareConfig& config) {
  LinkSpec& network = config.network;
  check_keys(node, file, "network", {"bandwidth", "latency", "bus_bandwidth", "rdma"});
  read(node, "rdma", file, "network", config.network_rdma, parse_yes_no);
  read(node, "bandwidth", file, "network", network.bandwidth, parse_bandwidth);
  read(node, "latency", file, "network", network.latency_s, parse_seconds);
  read(node, "bus_bandwidth", file, "network", network.bus_bandwidth, parse_bandwidth);
}

// The fields without which no time or memory can be computed, checked after
// the base is applied so that a derived file need not repeat them.
void check_required(const HardwareConfig& config, const YAML::Node& root, const std::string& file) {
  const YAML::Node at = root["gpu"] ? root["gpu"] : root;
  if (config.gpu.peak_flops_bf16 <= 0) {
    const bool given = root["gpu"] && root["gpu"]["peak_flops"] && root["gpu"]["peak_flops"]["bf16"];
    throw_at(file, given ? root["gpu"]["peak_flops"]["bf16"] : at,
             fmt::format("{}; give the dense BF16 rate, e.g. 'peak_flops: {{bf16: 989TFLOP/s}}'",
                         given ? "gpu.peak_flops.bf16 must be above 0" : "missing gpu.peak_flops.bf16"));
  }
  if (config.gpu.memory_bytes <= 0) throw_at(file, at, "missing gpu.memory; give the HBM size, e.g. 'memory: 80GB'");
  if (config.gpu.memory_bandwidth <= 0) {
    throw_at(file, at, "missing gpu.memory_bandwidth; give the HBM bandwidth, e.g. 'memory_bandwidth: 3.35TB/s'");
  }
  // Every transfer and collective crosses one of the two links.
  if (config.node_link.bandwidth <= 0) {
    throw_at(file, root["node"] ? root["node"] : root,
             "missing node.link_bandwidth; give each GPU's bandwidth to the others in its node, e.g. "
             "'link_bandwidth: 450GB/s'");
  }
  if (config.network.bandwidth <= 0) {
    throw_at(file, root["network"] ? root["network"] : root,
             "missing network.bandwidth; give each GPU's bandwidth between nodes, e.g. 'bandwidth: 400Gb/s'");
  }
  // NVLink SHARP reduces inside the switch, so an all-reduce's bus bandwidth
  // may pass the line rate, but not twice over.
  for (const auto& [section, link] : {std::pair{"node", &config.node_link}, std::pair{"network", &config.network}}) {
    if (link->bus_bandwidth > 2 * link->bandwidth && link->bandwidth > 0) {
      const YAML::Node where = root[section] ? root[section] : root;
      throw_at(file, where, fmt::format("{}.bus_bandwidth: {:.4g} GB/s is over twice the link's {:.4g} GB/s; give "
                                        "what NCCL's collectives reach (nccl-tests' busbw)",
                                        section, link->bus_bandwidth / 1e9, link->bandwidth / 1e9));
    }
  }
  if (config.gpu.sms > 0 && config.gpu.collective_sms >= config.gpu.sms) {
    throw_at(file, at, fmt::format("gpu.collective_sms: {} of {} SMs leaves none for compute; give fewer, e.g. 16",
                                   config.gpu.collective_sms, config.gpu.sms));
  }
  if (config.gpu.usable_memory_bytes() <= 0) {
    throw_at(file, at, "gpu.reserved leaves no usable memory; reserve less than gpu.memory");
  }
}

HardwareConfig load_at_depth(const std::string& name_or_path, int depth, const fs::path& relative_to);

HardwareConfig load_builtin_spelling(const std::string& word, int depth);

HardwareConfig load_base(const YAML::Node& node, const std::string& file, int depth) {
  const std::string base = scalar_text(node, file, "base");
  if (depth >= kMaxBaseDepth) {
    throw_at(file, node, fmt::format("base: more than {} files deep; check for a cycle of bases", kMaxBaseDepth));
  }
  try {
    return load_at_depth(base, depth + 1, fs::path(file).parent_path());
  } catch (const ParseError&) {
    throw;
  } catch (const InputError& error) {
    throw_at(file, node, fmt::format("base: {}", error.what()));
  }
}

constexpr const char* kClusterNotYet =
    "is a cluster description (node groups and network tiers), not one GPU kind: give a hardware file here (plan, "
    "simulate and model take a cluster of one kind)";

HardwareConfig read_root(const YAML::Node& root, const std::string& file, int depth) {
  if (root.IsMap() && root["node_groups"]) throw_at(file, root["node_groups"], fmt::format("{} {}", file, kClusterNotYet));
  if (!root.IsMap()) {
    throw_at(file, root,
             fmt::format("{}a hardware file is a map with keys name, gpu, node, network",
                         root.IsNull() ? "the file is empty: " : ""));
  }
  check_keys(root, file, "the hardware file",
             {"name", "aliases", "source", "base", "gpu", "node", "network", "host_link", "nodes", "runtime",
              "reliability"});
  HardwareConfig config = root["base"] ? load_base(root["base"], file, depth) : HardwareConfig{};
  // The name is the file's own, never the base's.
  config.name = root["name"] ? scalar_text(root["name"], file, "name") : fs::path(file).stem().string();
  // Aliases too are the file's own: a cluster does not answer to its GPU's names.
  config.aliases = root["aliases"] ? scalar_or_list(root["aliases"], file, "aliases") : std::vector<std::string>{};
  if (root["source"]) config.source = scalar_text(root["source"], file, "source");
  if (root["gpu"]) read_gpu(root["gpu"], file, config.gpu);
  if (root["node"]) read_node(root["node"], file, config);
  if (root["network"]) read_network(root["network"], file, config);
  if (root["host_link"]) read_host_link(root["host_link"], file, config.host_link);
  if (root["reliability"]) read_reliability(root["reliability"], file, config.reliability);
  if (root["gpu"] && root["gpu"]["efficiency"] && root["gpu"]["efficiency"]["matmul"]) config.matmul_given = true;
  if (const YAML::Node runtime = root["runtime"]) {
    config.runtime_given = true;
    check_keys(runtime, file, "runtime", {"layer_overhead", "pass_overhead", "moe_layer_host"});
    read(runtime, "layer_overhead", file, "runtime", config.layer_overhead_s, parse_seconds);
    read(runtime, "pass_overhead", file, "runtime", config.pass_overhead_s, parse_seconds);
    read(runtime, "moe_layer_host", file, "runtime", config.moe_layer_host_s, parse_seconds);
    // A number without a unit is seconds: 0.92 is not 0.92 ms.
    if (config.layer_overhead_s > 0.01) {
      throw_at(file, runtime["layer_overhead"],
               "runtime.layer_overhead: over 10 ms for one pass of one layer (a number "
               "without a unit is seconds); give the framework's cost per layer and "
               "pass, e.g. 0.5ms");
    }
    if (config.pass_overhead_s > 0.1) {
      throw_at(file, runtime["pass_overhead"],
               "runtime.pass_overhead: over 100 ms for one pass of a model chunk (a "
               "number without a unit is seconds); give the framework's cost per pass, "
               "e.g. 0.5ms");
    }
    if (config.moe_layer_host_s > 0.02) {
      throw_at(file, runtime["moe_layer_host"],
               "runtime.moe_layer_host: over 20 ms for the host to issue one pass of one "
               "layer (a number without a unit is seconds); give e.g. 4ms");
    }
  }
  if (const YAML::Node nodes = root["nodes"]) {
    config.nodes = parse_at(nodes, file, "nodes",
                            [](std::string_view text, std::string_view field) { return parse_count(text, field, 0); });
  }
  check_required(config, root, file);
  return config;
}

HardwareConfig parse_root(const YAML::Node& root, const std::string& file, int depth) {
  return read_yaml(file, [&] { return read_root(root, file, depth); });
}

HardwareConfig parse_text(const std::string& text, const std::string& file, int depth) {
  return parse_root(parse_yaml_text(text, file), file, depth);
}

// An existing file first (as given, then next to the file that names it as
// a base), else a built-in name.
HardwareConfig load_at_depth(const std::string& name_or_path, int depth, const fs::path& relative_to) {
  std::error_code error;
  if (fs::is_regular_file(name_or_path, error)) {
    return parse_root(load_yaml_file(name_or_path, "the hardware file"), name_or_path, depth);
  }
  const fs::path nearby = relative_to / name_or_path;
  if (!relative_to.empty() && fs::path(name_or_path).is_relative() && fs::is_regular_file(nearby, error)) {
    return parse_root(load_yaml_file(nearby.string(), "the hardware file"), nearby.string(), depth);
  }
  if (const EmbeddedFile* builtin = find_embedded("hardware", name_or_path)) {
    return parse_text(std::string(builtin->text), fmt::format("configs/hardware/{}.yaml", name_or_path), depth);
  }
  return load_builtin_spelling(name_or_path, depth);
}

// A built-in by an alias, or a spelling that differs in case and punctuation.
HardwareConfig load_builtin_spelling(const std::string& word, int depth) {
  const std::vector<std::string> names = builtin_hardware_names();
  std::vector<std::string> spellings, canonical;
  for (const std::string& name : names) {
    const HardwareConfig config = load_at_depth(name, depth, {});
    spellings.push_back(name);
    canonical.push_back(name);
    for (const std::string& alias : config.aliases) {
      spellings.push_back(alias);
      canonical.push_back(name);
    }
  }
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    if (name_key(spellings[i]) == name_key(word)) return load_at_depth(canonical[i], depth, {});
  }
  const std::vector<std::string> clusters = embedded_names("clusters");
  throw InputError(fmt::format("unknown hardware '{}': not a file and not a built-in{}; built-ins: {} (or a path to a "
                               "hardware YAML file); clusters, for `hardware show` and `hardware place`: {}",
                               word, did_you_mean(word, spellings, canonical), fmt::join(names, ", "),
                               fmt::join(clusters, ", ")));
}

}  // namespace

// The larger of the two reserves, not their sum: a file gives one of them,
// and a fraction that already covers a fixed context should not count twice.
std::int64_t GpuSpec::usable_memory_bytes() const {
  const auto by_fraction = static_cast<std::int64_t>(std::llround(reserved_fraction * static_cast<double>(memory_bytes)));
  return std::max<std::int64_t>(0, memory_bytes - std::max(by_fraction, reserved_bytes));
}

HardwareConfig load_hardware(const std::string& name_or_path) {
  std::error_code error;
  const std::vector<std::string> clusters = embedded_names("clusters");
  const bool cluster = std::any_of(clusters.begin(), clusters.end(),
                                   [&](const std::string& name) { return name_key(name) == name_key(name_or_path); });
  if (!fs::is_regular_file(name_or_path, error) && cluster) {
    throw InputError(fmt::format("'{}' {}", name_or_path, kClusterNotYet));
  }
  return load_at_depth(name_or_path, 0, {});
}

HardwareConfig parse_hardware_yaml(const std::string& text, const std::string& source_name) {
  return parse_text(text, source_name, 0);
}

std::vector<std::string> builtin_hardware_names() { return embedded_names("hardware"); }

std::vector<std::string> hardware_assumptions(const HardwareConfig& hardware) {
  std::vector<std::string> assumed;
  if (!hardware.matmul_given) {
    assumed.push_back(
        fmt::format("{} gives no gpu.efficiency.matmul: GEMMs at 100 % of peak, no kernel overhead", hardware.name));
  }
  if (!hardware.runtime_given) {
    assumed.push_back(fmt::format("{} gives no runtime: nothing paid outside the kernels", hardware.name));
  }
  return assumed;
}

}  // namespace pipeplan::models
