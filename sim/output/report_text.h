// The human summary of a simulation: headline figures and a per-rank table.
#pragma once

#include <string>

#include "sim/simulate.h"

namespace pipeplan::sim {

std::string report_to_text(const SimulationReport& report);

}  // namespace pipeplan::sim
