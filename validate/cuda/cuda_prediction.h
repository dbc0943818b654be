// The costs a --backend cuda validation predicts with when no --profile is
// given: measured on the GPUs the run uses, not on the CPU.
#pragma once

#include <optional>

#include "common/progress.h"
#include "models/profile_file.h"
#include "validate/transport.h"
#include "validate/validation_plan.h"

namespace pipeplan::validate {

// Rank 0 measures the plan's layers on its GPU at the plan's shape
// (profile_layers_cuda) and, for a plan of more than one rank when this
// process sees two GPUs, the NCCL link between them (measure_links_nccl);
// the other ranks wait up to `wait_s` at a barrier. Rank 0 gets the
// profile, the others nothing. Without CUDA it throws InputError.
std::optional<models::Profile> measure_cuda_profile(const ValidationPlan& plan, Transport& transport, double wait_s,
                                                    const ProgressFn& progress = {});

}  // namespace pipeplan::validate
