// The typed entry point to planning: a request in, the whole report out.
// The search runs, its best plan is replayed by the full engine beside
// Megatron's even split, placed on the hardware's nodes, written as a plan
// file and as each framework's config: what `pipeplan plan` prints and
// writes, for one GPU kind or a cluster of several. The plan command (and
// through it studies and the Python module) calls it.
#pragma once

#include <cstddef>
#include <string>

#include "models/cluster.h"
#include "models/hardware.h"
#include "planner/mixed/mixed_report.h"
#include "planner/plan.h"
#include "planner/report/plan_report.h"

namespace pipeplan::planner {

// How the plan file names the model and the hardware: as the user gave
// them (a zoo name or a path).
struct PlanSources {
  std::string model;
  std::string hardware;
};

// One GPU kind: the `top_k` best plans and the best in full. Throws
// InputError when no plan fits (no_plan_fits says why).
PlanReport make_plan(const PlanRequest& request, const PlanSources& sources, std::size_t top_k);

// A cluster of several GPU kinds: each kind alone and pipelines over kinds.
// `request.hardware` is the kind a memory cap must not exceed
// (kind_with_least_memory). Throws InputError when nothing fits.
MixedReport make_mixed_plan(const PlanRequest& request, const models::ClusterConfig& cluster,
                            const PlanSources& sources, std::size_t top_k);
models::HardwareConfig kind_with_least_memory(const models::ClusterConfig& cluster);

// Why a search found no plan under the cap: how close it came, and what
// would help (in the options' names), or which fixed choices to relax.
std::string no_plan_fits(const PlanSearchResult& search, const PlanRequest& request);

}  // namespace pipeplan::planner
