// A simulated model pipeline as JSON and as a human summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "step/model_simulation.h"

namespace pipeplan::step {

// The simulator's report plus, per rank, `memory_breakdown` and `layers`,
// and top-level `iteration_time_s`, `tokens_per_s`, `mfu`, `layout`,
// `stage_layers`.
nlohmann::ordered_json model_simulation_to_json(const ModelSimulation& simulation);
std::string model_simulation_to_text(const ModelSimulation& simulation);
// The expert all-to-all exposed and hidden (`expert_comm`), into `json`
// where the passes carry any.
void add_expert_comm_json(const ModelSimulation& simulation, nlohmann::ordered_json& json);
// Iteration time, throughput, layout and the memory table only.
std::string model_simulation_summary(const ModelSimulation& simulation);

// "embedding, layer 0..17" from a rank's layer names.
std::string summarise_layers(const std::vector<std::string>& names);

}  // namespace pipeplan::step
