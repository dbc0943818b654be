// What measuring a plan's costs asks for, on either backend: its layers
// at the plan's shape, and a link sweep up to a few of its messages.
#pragma once

#include <cstdint>
#include <optional>

#include "models/profile_file.h"
#include "profiler/layer_profiler.h"
#include "validate/transport.h"
#include "validate/validation_plan.h"

namespace pipeplan::validate {

// The plan's model at its micro-batch shape: 1 warm-up, 5 timed runs.
profiler::ProfileRequest plan_profile_request(const ValidationPlan& plan, const ProgressFn& progress = {});

// The largest message of a link sweep for the plan: four of the
// activations a stage sends (element_bytes each), at least 1 MiB.
std::int64_t plan_link_sweep_bytes(const ValidationPlan& plan, std::int64_t element_bytes);

// The CPU backend's costs for a validation run: rank 0 measures the plan's
// layers while the others wait at a barrier of `wait_s` (measuring on
// every rank at once would time each rank's copy of the same heavy pass
// against the others', a contention the run itself does not have); then
// the MPI link sweep between ranks 0 and 1. The profile is on rank 0.
std::optional<models::Profile> measure_cpu_profile(const ValidationPlan& plan, Transport& transport, double wait_s,
                                                   const ProgressFn& progress = {});

}  // namespace pipeplan::validate
