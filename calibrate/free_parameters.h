// The figures of a hardware description that `pipeplan calibrate` may fit:
// efficiencies of the time model, each with the physical range it must stay
// in (a fit never leaves it) and what it means.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/hardware.h"

namespace pipeplan::calibrate {

struct FreeParameter {
  std::string_view name;     // as in the hardware YAML: "gpu.efficiency.matmul.max"
  double lower = 0, upper = 0;
  std::string_view meaning;
  double& (*field)(models::HardwareConfig&);
};

// Every parameter that can be fitted.
const std::vector<FreeParameter>& free_parameters();

// The default fit: the large-kernel ceilings of GEMMs, attention and
// memory-bound kernels.
std::vector<FreeParameter> default_fit();

// "gpu.efficiency.matmul.max,gpu.efficiency.memory.max": each must be known
// and named once; an error lists the known names.
std::vector<FreeParameter> parse_fit(std::string_view list);

}  // namespace pipeplan::calibrate
