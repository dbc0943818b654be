// A hardware description: the GPU (peak rates, memory, efficiency), the node
// (GPUs and their links) and the network between nodes. Read from YAML (the
// built-in files in configs/hardware/ or a user's file); a file may name a
// `base` and override some fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipeplan::models {

// Fraction of peak reached: max_fraction * size / (size + half_size), a
// saturating curve in the work's size (FLOPs of one multiplication, or bytes
// moved by one kernel).
struct EfficiencyCurve {
  double max_fraction = 1.0;
  double half_size = 0.0;
  double at(double size) const { return size <= 0 ? max_fraction : max_fraction * size / (size + half_size); }
};

struct GpuSpec {
  double peak_flops_bf16 = 0;   // dense, per second
  double peak_flops_fp32 = 0;
  double peak_flops_fp8 = 0;
  std::int64_t memory_bytes = 0;
  double memory_bandwidth = 0;  // bytes per second
  EfficiencyCurve matmul;       // by FLOPs of one multiplication
  EfficiencyCurve attention;    // fused attention kernels, by FLOPs of one call
  EfficiencyCurve memory;       // elementwise kernels, by bytes moved
  double reserved_fraction = 0; // of memory, unusable (context, fragmentation)
  std::int64_t reserved_bytes = 0;
  std::int64_t usable_memory_bytes() const;
};

struct LinkSpec {
  double bandwidth = 0;  // bytes per second, per direction
  double latency_s = 0;
};

struct HardwareConfig {
  std::string name;
  std::vector<std::string> aliases;  // other names it answers to ("h100")
  std::string source;
  GpuSpec gpu;
  int gpus_per_node = 8;
  LinkSpec node_link;  // between two GPUs of one node (NVLink), per GPU
  LinkSpec network;    // between nodes, per GPU (one NIC each)
  int nodes = 0;       // 0: as many as asked for
};

// A built-in name ("h100-sxm"), one of its aliases ("h100") or a spelling
// differing in case and punctuation, or a path. Throws InputError (unknown name:
// lists the known ones) or ParseError (file, line, field).
HardwareConfig load_hardware(const std::string& name_or_path);
HardwareConfig parse_hardware_yaml(const std::string& text, const std::string& source_name);
std::vector<std::string> builtin_hardware_names();

}  // namespace pipeplan::models
