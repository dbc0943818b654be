#include "commands/hardware_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "models/hardware.h"

namespace pipeplan::commands {
namespace {

struct ShowOptions {
  std::string hardware;
  bool json = false;
};

std::string rate(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }
// Microseconds, the scale of launches and link latencies.
std::string micros(double seconds) { return fmt::format("{:.3g} us", seconds * 1e6); }
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
                     micros(gpu.matmul.kernel_overhead_s),
                     gpu.sms > 0 && !tiles.empty() ? fmt::format("tiles {} in waves of {} SMs", tiles, gpu.sms)
                                                   : std::string("no wave quantization (no SMs or tiles given)"));
}
std::string link(const models::LinkSpec& spec) {
  return fmt::format("{} per GPU per direction (collectives at {} bus bandwidth), latency {}", rate(spec.bandwidth),
                     rate(spec.collective_bandwidth()), micros(spec.latency_s));
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
                      format_bytes(gpu.usable_memory_bytes()), rate(gpu.memory_bandwidth));
  text += fmt::format("  GEMMs          {}\n", gemms(gpu));
  text += fmt::format("  attention      {}\n",
                      curve(gpu.attention, "peak", fmt::format("{:.3g} GFLOP per call", gpu.attention.half_size / 1e9)));
  text += fmt::format("  elementwise    {}\n", curve(gpu.memory, "HBM bandwidth", format_bytes(gpu.memory.half_size)));
  text += fmt::format("  node           {} GPUs, {}\n", hw.gpus_per_node, link(hw.node_link));
  text += fmt::format("  network        {}\n", link(hw.network));
  text += fmt::format("  host link      {}\n",
                      hw.host_link.bandwidth > 0 ? fmt::format("{} per GPU per direction, latency {} (offload copies)",
                                                               rate(hw.host_link.bandwidth), micros(hw.host_link.latency_s))
                                                 : "none described");
  text += fmt::format(
      "  runtime        {} per layer and {} per model chunk, each forward or backward pass, outside "
      "the kernels\n",
      format_ms(hw.layer_overhead_s), format_ms(hw.pass_overhead_s));
  text += hw.nodes > 0 ? fmt::format("  cluster        {} nodes, {} GPUs\n", hw.nodes, hw.nodes * hw.gpus_per_node)
                       : "  cluster        as many nodes as a plan asks for\n";
  return text;
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
  });
  auto options = std::make_shared<ShowOptions>();
  CLI::App* show = command->add_subcommand(
      "show", "A hardware description: peak rates, memory, efficiency curves, node links and network");
  show->add_option("hardware", options->hardware, "Hardware name or YAML file")->required();
  show->add_flag("--json", options->json, "Print one JSON object");
  show->callback([options] {
    const models::HardwareConfig hw = models::load_hardware(options->hardware);
    std::cout << (options->json ? hardware_json(hw).dump(2) + "\n" : hardware_text(hw));
  });
}

}  // namespace pipeplan::commands
