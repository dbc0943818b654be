// The human summary of a simulation: headline figures and a per-rank table.
#pragma once

#include <string>

#include "sim/simulate.h"

namespace pipeplan::sim {

std::string report_to_text(const SimulationReport& report);

// "  DOES NOT FIT: rank 0 needs ..." or "  memory  fits: ..." (a line), or
// empty when the report has no memory limit.
std::string memory_fit_line(const SimulationReport& report);

}  // namespace pipeplan::sim
