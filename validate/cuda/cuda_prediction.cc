#include "validate/cuda/cuda_prediction.h"

#include "profiler/backends.h"
#include "profiler/cuda/device_context.h"
#include "validate/plan_profile.h"

namespace pipeplan::validate {

// Rank 0 measures alone while the others wait: every rank measuring at
// once would time its GPU's pass against contention the run does not have.
// The link sweep runs before the barrier releases the others, which would
// otherwise start using the two GPUs it measures.
std::optional<models::Profile> measure_cuda_profile(const ValidationPlan& plan, Transport& transport, double wait_s,
                                                    const ProgressFn& progress) {
  std::optional<models::Profile> profile;
  if (transport.rank() == 0) {
    profile = profiler::profile_layers_cuda(plan_profile_request(plan, progress));
    if (transport.ranks() > 1 && profiler::cuda_device_count() >= 2) {
      profile->links = profiler::measure_links_nccl(plan_link_sweep_bytes(plan, 2), 3, 20);  // bf16 activations
    }
  }
  transport.barrier(wait_s);
  return profile;
}

}  // namespace pipeplan::validate
