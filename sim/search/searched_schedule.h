// What the commands and the planner need around a searched schedule: the
// empty schedule its stage costs are laid out on, and the activation bytes
// each rank may hold (from a limit in M_B or bytes, or from what a memory
// cap leaves beside each rank's static bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/costs.h"
#include "sim/schedule.h"
#include "sim/search/activation_limit.h"

namespace pipeplan::sim {

// One stage per rank, no actions: what expand_rank_costs and the stage
// costs of a model are built on before the order is searched.
Schedule searched_schedule_shape(const std::string& name, int ranks, int microbatches);

// Per rank: the limit for that rank's M_B. Throws InputError when a rank
// keeps no activations (the limit would bind nothing).
std::vector<std::int64_t> activation_limits(const ActivationLimit& limit, const PipelineCosts& costs);

// Per rank: `cap` less the rank's static bytes (weights, optimizer state).
std::vector<std::int64_t> limits_under_cap(std::int64_t cap, const PipelineCosts& costs);

}  // namespace pipeplan::sim
