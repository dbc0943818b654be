// Hardware files: the built-in GPUs against their datasheets, units, `base`
// inheritance and the errors a user sees for a bad file.
#include "models/hardware.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/error.h"
#include "tests/support/temp_files.h"

namespace pipeplan::models {
namespace {

struct Datasheet {
  double bf16_flops;
  double memory_bytes;
  double memory_bandwidth;
  double nvlink_per_direction;  // the L40S's: PCIe peer copies (assumed 80 % of 4.0 x16)
  int gpus_per_node = 8;
  double network = 50e9;          // InfiniBand NDR per GPU; the L40S's assumed 200 Gb/s
  double pcie_per_direction = 63e9;  // PCIe 5.0 x16 after coding; 4.0: 31.5
};

// reference.md, "Hardware (vendor datasheets as commonly quoted)": dense
// BF16, HBM, HBM bandwidth, NVLink per GPU counting both directions (halved
// here: the files hold one direction). InfiniBand NDR: 400 Gb/s = 50 GB/s.
// HBM capacities are binary: the "80 GB" of an A100 is 81920 MiB in nvidia-smi.
const std::map<std::string, Datasheet>& datasheets() {
  static const std::map<std::string, Datasheet> kSheets{
      {"a100-80gb", {312e12, 80.0 * (1 << 30), 2.04e12, 600e9 / 2}},
      {"h100-sxm", {989e12, 80.0 * (1 << 30), 3.35e12, 900e9 / 2}},
      {"h200-sxm", {989e12, 141.0 * (1 << 30), 4.8e12, 900e9 / 2}},
      {"b200", {2250e12, 180.0 * (1 << 30), 8e12, 1.8e12 / 2}},
      // NVIDIA GB200 NVL72 datasheet, rack totals over 72 GPUs: 180 PFLOP/s
      // dense BF16, 13.4 TB HBM3e; a compute tray holds 4 GPUs.
      {"gb200", {2500e12, 186.0 * (1 << 30), 8e12, 1.8e12 / 2, 4}},
      // NVIDIA L40S datasheet: 362 TFLOP/s dense BF16, 48 GB GDDR6 at
      // 864 GB/s, PCIe 4.0 x16 and no NVLink.
      {"l40s", {362e12, 48.0 * (1 << 30), 864e9, 25e9, 8, 25e9, 31.5e9}},
  };
  return kSheets;
}

// The GPU a built-in is made of: itself, or the base of a cluster file.
std::string gpu_of(const std::string& name) {
  const std::map<std::string, std::string> clusters{{"dgx-a100-cluster", "a100-80gb"},
                                                    {"dgx-h100-cluster", "h100-sxm"},
                                                    {"dgx-h200-cluster", "h200-sxm"},
                                                    {"dgx-b200-cluster", "b200"}};
  const auto cluster = clusters.find(name);
  return cluster == clusters.end() ? name : cluster->second;
}

using pipeplan::testing::write_temp;

// The ParseError a file raises; fails the test when it loads.
ParseError parse_error_of(const std::string& path) {
  try {
    load_hardware(path);
  } catch (const ParseError& error) {
    return error;
  }
  ADD_FAILURE() << path << " loaded without an error";
  return ParseError(path, 0, 0, "");
}

TEST(Hardware, EveryBuiltinGpuMatchesItsDatasheet) {
  std::vector<std::string> names = builtin_hardware_names();
  std::erase(names, "cpu");  // CPU ranks: checked below
  ASSERT_EQ(names.size(), 10u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const auto sheet = datasheets().find(gpu_of(name));
    ASSERT_NE(sheet, datasheets().end()) << "no datasheet row for a built-in file";
    const HardwareConfig hw = load_hardware(name);
    EXPECT_EQ(hw.name, name);
    EXPECT_FALSE(hw.source.empty());
    EXPECT_DOUBLE_EQ(hw.gpu.peak_flops_bf16, sheet->second.bf16_flops);
    EXPECT_DOUBLE_EQ(static_cast<double>(hw.gpu.memory_bytes), sheet->second.memory_bytes);
    EXPECT_DOUBLE_EQ(hw.gpu.memory_bandwidth, sheet->second.memory_bandwidth);
    EXPECT_DOUBLE_EQ(hw.node_link.bandwidth, sheet->second.nvlink_per_direction);
    EXPECT_EQ(hw.gpus_per_node, sheet->second.gpus_per_node);
    EXPECT_DOUBLE_EQ(hw.network.bandwidth, sheet->second.network);
    // The host link: 80 % of PCIe 4.0 x16 (A100, L40S) or 5.0 x16 per
    // direction, 31.5 and 63 GB/s after 128b/130b coding.
    const double pcie = name.starts_with("a100") || name.starts_with("dgx-a100") ? 31.5e9
                                                                                  : sheet->second.pcie_per_direction;
    EXPECT_NEAR(hw.host_link.bandwidth, 0.8 * pcie, 0.01 * pcie);
    EXPECT_GT(hw.gpu.usable_memory_bytes(), 0);
    EXPECT_LT(hw.gpu.usable_memory_bytes(), hw.gpu.memory_bytes);
  }
}

TEST(Hardware, CpuRanksDescribeOneCoreEach) {
  const HardwareConfig cpu = load_hardware("cpu");
  EXPECT_EQ(cpu.gpus_per_node, 2);  // one rank per core of a 2-core host
  // The CPU backend runs fp32: its "bf16" rate is the fp32 rate.
  EXPECT_DOUBLE_EQ(cpu.gpu.peak_flops_bf16, cpu.gpu.peak_flops_fp32);
  EXPECT_DOUBLE_EQ(cpu.gpu.peak_flops_fp32, 96e9);  // 3 GHz x 32 fp32 FLOP per cycle
  EXPECT_EQ(cpu.gpu.usable_memory_bytes(), 11LL << 30);
  EXPECT_EQ(cpu.host_link.bandwidth, 0);  // ranks in host memory: nothing to offload to
}

TEST(Hardware, ClusterFilesOnlyAddANodeCount) {
  const HardwareConfig node = load_hardware("h100-sxm");
  const HardwareConfig cluster = load_hardware("dgx-h100-cluster");
  EXPECT_EQ(node.nodes, 0);
  EXPECT_EQ(cluster.nodes, 2048);
  EXPECT_DOUBLE_EQ(cluster.gpu.peak_flops_fp8, node.gpu.peak_flops_fp8);
  EXPECT_DOUBLE_EQ(cluster.gpu.matmul.kernel_overhead_s, node.gpu.matmul.kernel_overhead_s);
  EXPECT_DOUBLE_EQ(cluster.network.latency_s, node.network.latency_s);
  EXPECT_EQ(load_hardware("dgx-a100-cluster").nodes, 384);  // 3072 GPUs, Narayanan et al. 2021
}

TEST(Hardware, UnitsParse) {
  const HardwareConfig hw = parse_hardware_yaml(R"(
name: test
gpu:
  peak_flops: {bf16: 989TFLOP/s, fp32: 67e12, fp8: 1.979PFLOP/s}
  memory: 80GB
  memory_bandwidth: 3.35TB/s
  efficiency:
    memory: {max: 85%, half_size: 8MiB}
  reserved: 2GiB
node: {gpus: 4, link_bandwidth: 450GB/s, link_latency: 3us}
network: {bandwidth: 400Gb/s, latency: 0.005ms}
nodes: 16
)", "test.yaml");
  EXPECT_DOUBLE_EQ(hw.gpu.peak_flops_bf16, 989e12);
  EXPECT_DOUBLE_EQ(hw.gpu.peak_flops_fp32, 67e12);
  EXPECT_DOUBLE_EQ(hw.gpu.peak_flops_fp8, 1979e12);
  EXPECT_EQ(hw.gpu.memory_bytes, 80'000'000'000);
  EXPECT_DOUBLE_EQ(hw.gpu.memory_bandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(hw.gpu.memory.max_fraction, 0.85);
  EXPECT_DOUBLE_EQ(hw.gpu.memory.half_size, 8.0 * 1024 * 1024);
  EXPECT_EQ(hw.gpu.usable_memory_bytes(), 80'000'000'000 - (2LL << 30));
  EXPECT_EQ(hw.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(hw.node_link.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(hw.network.bandwidth, 50e9);  // InfiniBand NDR, reference.md
  EXPECT_DOUBLE_EQ(hw.network.latency_s, 5e-6);
  EXPECT_EQ(hw.nodes, 16);
}

// Rates past any machine (1e308 PFLOP/s read as inf, MFU 0 %) are refused
// naming the field; the limits sit far above every shipped file.
TEST(Hardware, RatesPastAnyMachineAreRefused) {
  const auto refusal = [](const std::string& peak, const std::string& bandwidth) {
    try {
      parse_hardware_yaml("name: test\ngpu:\n  peak_flops: {bf16: " + peak + ", fp32: 67e12}\n  memory: 80GB\n"
                          "  memory_bandwidth: " + bandwidth + "\nnode: {gpus: 4, link_bandwidth: 450GB/s, "
                          "link_latency: 3us}\nnetwork: {bandwidth: 400Gb/s, latency: 5us}\n",
                          "test.yaml");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal("1000PFLOP/s", "1000TB/s"), "");
  EXPECT_NE(refusal("1e308PFLOP/s", "3.35TB/s").find("over the limit of 1000PFLOP/s"), std::string::npos);
  EXPECT_NE(refusal("989TFLOP/s", "1e9GB/s").find("over the limit of 1000TB/s"), std::string::npos);
  EXPECT_NE(refusal("989TFLOP/s", "1e9GB/s").find("memory_bandwidth"), std::string::npos);
}

TEST(Hardware, ReservedFractionLeavesTheRest) {
  const HardwareConfig hw = parse_hardware_yaml(
      "gpu: {peak_flops: {bf16: 1e12}, memory: 100GB, memory_bandwidth: 1TB/s, reserved: 5%}\n"
      "node: {link_bandwidth: 100GB/s}\nnetwork: {bandwidth: 10GB/s}\n",
      "frac.yaml");
  EXPECT_EQ(hw.name, "frac");  // no name: the file's stem
  EXPECT_EQ(hw.gpu.usable_memory_bytes(), 95'000'000'000);
}

TEST(Hardware, BaseOverridesOnlyWhatIsGiven) {
  const HardwareConfig base = load_hardware("h100-sxm");
  const HardwareConfig derived = parse_hardware_yaml(R"(
name: h100-96gb
base: h100-sxm
gpu:
  memory: 96GB
  efficiency:
    matmul: {max: 0.7}
network: {bandwidth: 200Gb/s}
)", "derived.yaml");
  EXPECT_EQ(derived.name, "h100-96gb");
  EXPECT_EQ(derived.gpu.memory_bytes, 96'000'000'000);
  EXPECT_DOUBLE_EQ(derived.gpu.matmul.max_fraction, 0.7);
  EXPECT_DOUBLE_EQ(derived.network.bandwidth, 25e9);
  // Untouched: everything else, including the other half of the curve.
  EXPECT_DOUBLE_EQ(derived.gpu.matmul.kernel_overhead_s, base.gpu.matmul.kernel_overhead_s);
  EXPECT_DOUBLE_EQ(derived.gpu.peak_flops_bf16, base.gpu.peak_flops_bf16);
  EXPECT_DOUBLE_EQ(derived.gpu.memory_bandwidth, base.gpu.memory_bandwidth);
  EXPECT_DOUBLE_EQ(derived.gpu.attention.max_fraction, base.gpu.attention.max_fraction);
  EXPECT_DOUBLE_EQ(derived.gpu.reserved_fraction, base.gpu.reserved_fraction);
  EXPECT_DOUBLE_EQ(derived.node_link.bandwidth, base.node_link.bandwidth);
  EXPECT_DOUBLE_EQ(derived.network.latency_s, base.network.latency_s);
  EXPECT_EQ(derived.gpus_per_node, base.gpus_per_node);
}

TEST(Hardware, BaseMayBeAFileNextToTheDerivedOne) {
  const std::string parent =
      write_temp("hw_parent.yaml", "gpu: {peak_flops: {bf16: 100e12}, memory: 10GB, memory_bandwidth: 1TB/s}\n"
                                   "node: {link_bandwidth: 100GB/s}\nnetwork: {bandwidth: 10GB/s}\n");
  const std::string parent_name = std::filesystem::path(parent).filename().string();
  const std::string child = write_temp("hw_child.yaml", "base: " + parent_name + "\nnodes: 3\n");
  const HardwareConfig hw = load_hardware(child);
  EXPECT_EQ(hw.name, std::filesystem::path(child).stem().string());
  EXPECT_DOUBLE_EQ(hw.gpu.peak_flops_bf16, 100e12);
  EXPECT_EQ(hw.nodes, 3);
}

TEST(Hardware, UnknownNameListsTheBuiltins) {
  try {
    load_hardware("h300-imaginary");
    FAIL() << "loaded an unknown name";
  } catch (const ParseError&) {
    FAIL() << "an unknown name is not a parse error";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("h300-imaginary"), std::string::npos) << message;
    for (const std::string& name : builtin_hardware_names()) {
      EXPECT_NE(message.find(name), std::string::npos) << message;
    }
  }
}

TEST(Hardware, UnknownKeyIsReportedAtItsLineWithTheKnownKeys) {
  const ParseError error = parse_error_of(write_temp("hw_key.yaml", "base: h100-sxm\ngpu:\n  memroy: 80GB\n"));
  EXPECT_EQ(error.line(), 3);
  EXPECT_EQ(error.column(), 3);
  const std::string message = error.what();
  EXPECT_NE(message.find("memroy"), std::string::npos) << message;
  EXPECT_NE(message.find("memory_bandwidth"), std::string::npos) << message;
}

TEST(Hardware, NegativeBandwidthIsReportedAtItsLine) {
  const ParseError error =
      parse_error_of(write_temp("hw_neg.yaml", "base: h100-sxm\nnetwork:\n  latency: 5us\n  bandwidth: -400Gb/s\n"));
  EXPECT_EQ(error.line(), 4);
  EXPECT_NE(std::string(error.what()).find("network.bandwidth"), std::string::npos) << error.what();
}

// What a mixture of experts' dispatcher needs: on by default, false where
// the file says so, anything else refused at its line.
TEST(Hardware, NvlinkAndRdmaAreReadAsGiven) {
  EXPECT_TRUE(load_hardware("h100-sxm").node_nvlink);
  EXPECT_TRUE(load_hardware("h100-sxm").network_rdma);
  const HardwareConfig plain =
      load_hardware(write_temp("hw_eth.yaml", "base: h100-sxm\nnode:\n  nvlink: false\nnetwork:\n  rdma: false\n"));
  EXPECT_FALSE(plain.node_nvlink);
  EXPECT_FALSE(plain.network_rdma);
  const ParseError error = parse_error_of(write_temp("hw_rdma.yaml", "base: h100-sxm\nnetwork:\n  rdma: maybe\n"));
  EXPECT_NE(std::string(error.what()).find("network.rdma: 'maybe' is not true or false"), std::string::npos)
      << error.what();
}

TEST(Hardware, AHostTimeWithoutItsUnitIsRefusedAtItsLine) {
  const ParseError error =
      parse_error_of(write_temp("hw_host.yaml", "base: h100-sxm\nruntime:\n  moe_layer_host: 4.9\n"));
  EXPECT_EQ(error.line(), 3);
  EXPECT_NE(std::string(error.what()).find("runtime.moe_layer_host: over 20 ms"), std::string::npos) << error.what();
}

TEST(Hardware, EfficiencyAboveOneIsReportedAtItsLine) {
  const ParseError error = parse_error_of(
      write_temp("hw_eff.yaml", "base: h100-sxm\ngpu:\n  efficiency:\n    matmul:\n      max: 1.2\n"));
  EXPECT_EQ(error.line(), 5);
  EXPECT_NE(std::string(error.what()).find("gpu.efficiency.matmul.max"), std::string::npos) << error.what();
}

TEST(Hardware, MissingPeakIsReportedAtTheGpuSection) {
  const ParseError error =
      parse_error_of(write_temp("hw_peak.yaml", "name: x\ngpu:\n  memory: 80GB\n  memory_bandwidth: 3TB/s\n"));
  EXPECT_EQ(error.line(), 3);  // the gpu map's first entry
  EXPECT_NE(std::string(error.what()).find("gpu.peak_flops.bf16"), std::string::npos) << error.what();
}

TEST(Hardware, MissingLinkBandwidthsAreReported) {
  // Without them every transfer would take forever (inf and NaN figures).
  const std::string gpu = "name: x\ngpu:\n  memory: 80GB\n  memory_bandwidth: 3TB/s\n  peak_flops: {bf16: 989TFLOP/s}\n";
  ParseError error = parse_error_of(write_temp("hw_no_node.yaml", gpu + "network: {bandwidth: 50GB/s}\n"));
  EXPECT_NE(std::string(error.what()).find("missing node.link_bandwidth"), std::string::npos) << error.what();
  error = parse_error_of(write_temp("hw_no_network.yaml", gpu + "node:\n  gpus: 8\n  link_bandwidth: 450GB/s\n"));
  EXPECT_NE(std::string(error.what()).find("missing network.bandwidth"), std::string::npos) << error.what();
  // A derived file need not repeat its base's.
  EXPECT_NO_THROW(load_hardware(write_temp("hw_derived_links.yaml", "base: h100-sxm\nname: y\nnetwork: {latency: 9us}\n")));
}

TEST(Hardware, UnknownBaseIsReportedAtTheBaseLine) {
  const ParseError error = parse_error_of(write_temp("hw_base.yaml", "name: x\nbase: h900\n"));
  EXPECT_EQ(error.line(), 2);
  EXPECT_NE(std::string(error.what()).find("h100-sxm"), std::string::npos) << error.what();
}

TEST(Hardware, CyclicBasesAreReported) {
  const std::string a = pipeplan::testing::temp_path("hw_cycle_a.yaml");
  const std::string b = pipeplan::testing::temp_path("hw_cycle_b.yaml");
  write_temp("hw_cycle_a.yaml", "base: " + std::filesystem::path(b).filename().string() + "\n");
  const ParseError error =
      parse_error_of(write_temp("hw_cycle_b.yaml", "base: " + std::filesystem::path(a).filename().string() + "\n"));
  EXPECT_NE(std::string(error.what()).find("cycle"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace pipeplan::models

namespace pipeplan::models {
namespace {

TEST(Hardware, GemmTilesSmsRuntimeAndBusBandwidthAreRead) {
  const HardwareConfig hw = parse_hardware_yaml(R"(
base: h100-sxm
gpu:
  sms: 100
  gemm_tiles: [{rows: 64, columns: 64, share: 0.5}]
  efficiency: {matmul: {kernel_overhead: 7us}}
node: {bus_bandwidth: 300GB/s}
runtime: {pass_overhead: 0.5ms, layer_overhead: 0.25ms, moe_layer_host: 3ms}
)",
                                                "tiles.yaml");
  EXPECT_EQ(hw.gpu.sms, 100);
  ASSERT_EQ(hw.gpu.gemm_tiles.size(), 1u);
  EXPECT_EQ(hw.gpu.gemm_tiles[0].rows, 64);
  EXPECT_DOUBLE_EQ(hw.gpu.gemm_tiles[0].share, 0.5);
  EXPECT_DOUBLE_EQ(hw.gpu.matmul.kernel_overhead_s, 7e-6);
  EXPECT_DOUBLE_EQ(hw.node_link.bus_bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(hw.pass_overhead_s, 5e-4);
  EXPECT_DOUBLE_EQ(hw.layer_overhead_s, 2.5e-4);
  EXPECT_DOUBLE_EQ(hw.moe_layer_host_s, 3e-3);
  EXPECT_EQ(hw.gpu.matmul.max_fraction, load_hardware("h100-sxm").gpu.matmul.max_fraction);
}

TEST(Hardware, GemmFieldsThatCannotBeUsedNameTheFix) {
  const auto message = [](const std::string& yaml) {
    try {
      parse_hardware_yaml("base: h100-sxm\n" + yaml, "bad.yaml");
    } catch (const ParseError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("gpu: {efficiency: {matmul: {half_size: 5e9}}}").find("kernel_overhead"), std::string::npos);
  EXPECT_NE(message("gpu: {gemm_tiles: [{rows: 128, columns: 128, share: 1.5}]}").find("gemm_tiles[0].share"),
            std::string::npos);
  EXPECT_NE(message("gpu: {gemm_tiles: [{rows: 128}]}").find("rows and columns"), std::string::npos);
  EXPECT_NE(message("gpu: {gemm_tiles: []}").find("gpu.gemm_tiles"), std::string::npos);
  EXPECT_NE(message("runtime: {overhead: 1ms}").find("overhead"), std::string::npos);
}

}  // namespace
}  // namespace pipeplan::models
