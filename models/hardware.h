// A hardware description: the GPU (peak rates, memory, efficiency), the node
// (GPUs and their links) and the network between nodes. Read from YAML (the
// built-in files in configs/hardware/ or a user's file); a file may name a
// `base` and override some fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/reliability.h"

namespace pipeplan::models {

// Fraction of peak reached: max_fraction * size / (size + half_size), a
// saturating curve in the work's size (FLOPs of one multiplication, or bytes
// moved by one kernel).
struct EfficiencyCurve {
  double max_fraction = 1.0;
  double half_size = 0.0;
  double at(double size) const { return size <= 0 ? max_fraction : max_fraction * size / (size + half_size); }
};

// A GEMM kernel's output tile (rows x columns of C per thread block) and the
// share of the matmul ceiling it reaches: smaller tiles reuse each loaded
// element less, so they run slower per FLOP but quantize less.
struct GemmTile {
  int rows = 128;
  int columns = 128;
  double share = 1.0;
};

// Large-GEMM ceiling (share of peak in full waves of the best tile) and the
// fixed cost of one GEMM kernel (launch, prologue, epilogue).
struct MatmulSpec {
  double max_fraction = 1.0;
  double kernel_overhead_s = 0;
  double fp8_max_fraction = 0;  // of the FP8 peak; 0: as max_fraction
  double fp8_share() const { return fp8_max_fraction > 0 ? fp8_max_fraction : max_fraction; }
};

struct GpuSpec {
  double peak_flops_bf16 = 0;   // dense, per second
  double peak_flops_fp32 = 0;
  double peak_flops_fp8 = 0;
  std::int64_t memory_bytes = 0;
  double memory_bandwidth = 0;  // bytes per second
  int sms = 0;                  // streaming multiprocessors; 0: no wave quantization
  // SMs a collective's kernels hold while it runs beside compute (NCCL's
  // channels, Transformer Engine's userbuffer kernels): compute overlapped
  // with it runs on the rest.
  int collective_sms = 0;
  std::vector<GemmTile> gemm_tiles;  // the tiles a GEMM library picks among
  MatmulSpec matmul;
  EfficiencyCurve attention;    // fused attention kernels, by FLOPs of one call
  EfficiencyCurve memory;       // elementwise kernels, by bytes moved
  double reserved_fraction = 0; // of memory, unusable (context, fragmentation)
  std::int64_t reserved_bytes = 0;
  std::int64_t usable_memory_bytes() const;
};

struct LinkSpec {
  double bandwidth = 0;  // bytes per second, per direction
  double latency_s = 0;
  // The bus bandwidth NCCL's collectives reach on large messages over these
  // links (nccl-tests' busbw), below the line rate; 0: the line rate.
  double bus_bandwidth = 0;
  double collective_bandwidth() const { return bus_bandwidth > 0 ? bus_bandwidth : bandwidth; }
};

// One tier of switches between nodes: nodes under one of its switches reach
// each other through it, at what its uplinks carry (models/cluster.h reads
// them from a cluster's `network`).
struct NetworkTier {
  std::string name;             // "leaf", "spine"
  int nodes = 0;                // nodes under one switch of this tier; 0: every node
  // What the switches below could send into this tier over what it carries, >= 1:
  // traffic that crosses it runs at the NIC's rate over this.
  double oversubscription = 1;
  double latency_s = 0;         // one crossing of this tier
};

struct HardwareConfig {
  std::string name;
  std::vector<std::string> aliases;  // other names it answers to ("h100")
  std::string source;
  GpuSpec gpu;
  int gpus_per_node = 8;
  LinkSpec node_link;  // between two GPUs of one node (NVLink), per GPU
  LinkSpec network;    // between nodes, per GPU (one NIC each)
  // Each GPU to its host's memory (PCIe, or NVLink-C2C), per direction:
  // what activation offload copies over; bandwidth 0: none described.
  LinkSpec host_link;
  int nodes = 0;       // 0: as many as asked for
  // GPUs on one NVLink domain, reached over node_link: 0 as the node (a
  // GB200 NVL72 rack: 72 GPUs of 18 nodes).
  int nvlink_domain = 0;
  // The switches between nodes, the leaf first (a cluster's network, with
  // the network's latency theirs); empty: one switch joins every node at
  // the network's rate and latency.
  std::vector<NetworkTier> network_tiers;
  // GPUs a group reaches over node_link: the NVLink domain, or the node
  // where that is smaller (PCIe peers).
  int local_gpus() const { return nvlink_domain > gpus_per_node ? nvlink_domain : gpus_per_node; }
  // What the framework spends outside the kernels, per micro-batch:
  // layer_overhead per transformer layer per forward and backward pass (the
  // host launching that layer's kernels and the waits between its streams;
  // a full recompute runs the forward's again), pass_overhead once more per
  // pass of a model chunk (its schedule step and transfers' setup). NVIDIA's
  // GPT-3 175B FP8 runs at VP 6 and VP 12 (two layers per chunk, one) take
  // the same time, so the cost follows the layers, not the chunks.
  double layer_overhead_s = 0;
  double pass_overhead_s = 0;
  // The host's time to issue one pass of one mixture-of-experts layer: with
  // the router's sync per forward the pass takes at least this
  // (models::moe_host_bound_s).
  double moe_layer_host_s = 0;
  // What the dispatchers of a mixture of experts need: NVLink between a
  // node's GPUs (`node.nvlink`, false for PCIe-only servers) and RDMA
  // between nodes (`network.rdma`: InfiniBand or RoCE, false for plain
  // Ethernet). DeepEP moves tokens over both (check_dispatcher).
  bool node_nvlink = true;
  bool network_rdma = true;
  // Whether the file (or its base) gives them: without, GEMMs run at the
  // tiles' full peak with no kernel overhead, and nothing is paid outside
  // the kernels (said beside every figure: hardware_assumptions).
  bool matmul_given = false;
  bool runtime_given = false;
  // Failures, checkpoint storage and restarts (`pipeplan goodput`): the
  // file's `reliability:` over the built-in defaults.
  ReliabilityConfig reliability = default_reliability();
};

// What a description leaves at its optimistic defaults, one phrase each
// ("no gpu.efficiency.matmul: GEMMs at 100 % of peak"); empty when none.
std::vector<std::string> hardware_assumptions(const HardwareConfig& hardware);

// A built-in name ("h100-sxm"), one of its aliases ("h100") or a spelling
// differing in case and punctuation, or a path. Throws InputError (unknown name:
// lists the known ones) or ParseError (file, line, field).
HardwareConfig load_hardware(const std::string& name_or_path);
HardwareConfig parse_hardware_yaml(const std::string& text, const std::string& source_name);
std::vector<std::string> builtin_hardware_names();

}  // namespace pipeplan::models
