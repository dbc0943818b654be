#include "calibrate/free_parameters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/close_names.h"
#include "common/error.h"

namespace pipeplan::calibrate {

const std::vector<FreeParameter>& free_parameters() {
  // Ceilings: a large kernel reaches at most its peak and, in every
  // published measurement, well above a tenth of it. Half sizes and kernel
  // overheads: a fixed cost per kernel between about 0.1 us and 1 ms at the
  // rates these GPUs run (GEMM launches: at most 50 us). Bus bandwidths: what
  // any NVLink or NVSwitch generation carries per GPU, 10 GB/s to 2 TB/s.
  static const std::vector<FreeParameter> kParameters{
      {"gpu.efficiency.matmul.max", 0.1, 1.0, "share of bf16 peak a large GEMM reaches",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.matmul.max_fraction; }},
      {"gpu.efficiency.matmul.fp8_max", 0.1, 1.0, "share of FP8 peak a large FP8 GEMM reaches",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.matmul.fp8_max_fraction; }},
      {"gpu.efficiency.matmul.kernel_overhead", 0.0, 50e-6, "fixed seconds of one GEMM kernel",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.matmul.kernel_overhead_s; }},
      {"gpu.efficiency.attention.max", 0.1, 1.0, "share of bf16 peak a large fused attention call reaches",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.attention.max_fraction; }},
      {"gpu.efficiency.attention.half_size", 1e6, 1e13, "attention FLOPs at which half the ceiling is reached",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.attention.half_size; }},
      {"gpu.efficiency.memory.max", 0.1, 1.0, "share of HBM bandwidth a large elementwise kernel reaches",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.memory.max_fraction; }},
      {"gpu.efficiency.memory.half_size", 1e3, 1e9, "bytes at which half the ceiling is reached",
       [](models::HardwareConfig& hw) -> double& { return hw.gpu.memory.half_size; }},
      {"runtime.layer_overhead", 0.0, 2e-3, "seconds per layer per forward or backward pass outside its kernels",
       [](models::HardwareConfig& hw) -> double& { return hw.layer_overhead_s; }},
      {"runtime.moe_layer_host", 0.0, 10e-3,
       "seconds the host takes to issue one pass of one mixture-of-experts layer (its router syncs the host)",
       [](models::HardwareConfig& hw) -> double& { return hw.moe_layer_host_s; }},
      {"runtime.pass_overhead", 0.0, 2e-3, "seconds per forward or backward pass of a model chunk outside its kernels",
       [](models::HardwareConfig& hw) -> double& { return hw.pass_overhead_s; }},
      {"node.bus_bandwidth", 10e9, 2e12, "bytes/s NCCL's collectives reach inside a node (bus bandwidth)",
       [](models::HardwareConfig& hw) -> double& { return hw.node_link.bus_bandwidth; }},
  };
  return kParameters;
}

std::vector<FreeParameter> default_fit() {
  // The pair the shipped runs determine well (README, "Calibration").
  return parse_fit("gpu.efficiency.matmul.max,runtime.layer_overhead");
}

std::vector<FreeParameter> parse_fit(std::string_view list) {
  std::vector<std::string> names;
  for (const FreeParameter& parameter : free_parameters()) names.emplace_back(parameter.name);
  std::vector<FreeParameter> fit;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = list.substr(start, comma - start);
    const auto known = std::find_if(free_parameters().begin(), free_parameters().end(),
                                    [&](const FreeParameter& parameter) { return parameter.name == name; });
    if (known == free_parameters().end()) {
      throw InputError(fmt::format("--fit: no parameter '{}'{}; the parameters are {}", name,
                                   did_you_mean(name, names), fmt::join(names, ", ")));
    }
    if (std::any_of(fit.begin(), fit.end(), [&](const FreeParameter& parameter) { return parameter.name == name; })) {
      throw InputError(fmt::format("--fit: '{}' is named twice; name it once", name));
    }
    fit.push_back(*known);
    start = comma + 1;
  }
  return fit;
}

}  // namespace pipeplan::calibrate
