// The simulation report as JSON, with units in the key names (_ms, _bytes).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/simulate.h"

namespace pipeplan::sim {

nlohmann::ordered_json report_to_json(const SimulationReport& report);

}  // namespace pipeplan::sim
