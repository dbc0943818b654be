// The simulation report as JSON, with units in the key names (_ms, _bytes).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/simulate.h"

namespace pipeplan::sim {

// With a memory limit, also `memory_limit_bytes`, `memory_limit_source`,
// `fits` and `over_memory_ranks` (rank, peak_memory_bytes, over_by_bytes).
nlohmann::ordered_json report_to_json(const SimulationReport& report);

// Sets those four keys in `json` (nothing without a limit).
void add_memory_fit(nlohmann::ordered_json& json, const SimulationReport& report);

}  // namespace pipeplan::sim
