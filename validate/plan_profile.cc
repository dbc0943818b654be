#include "validate/plan_profile.h"

#include <algorithm>

#include "profiler/backends.h"

namespace pipeplan::validate {

profiler::ProfileRequest plan_profile_request(const ValidationPlan& plan, const ProgressFn& progress) {
  profiler::ProfileRequest request;
  request.progress = progress;
  request.model = plan.model;
  request.micro_batch_sizes = {plan.shape.micro_batch_size};
  request.seq_lens = {plan.shape.seq_len};
  request.warmup = 1;
  request.repeats = 5;
  return request;
}

std::int64_t plan_link_sweep_bytes(const ValidationPlan& plan, std::int64_t element_bytes) {
  const std::int64_t message =
      static_cast<std::int64_t>(plan.shape.micro_batch_size) * plan.shape.seq_len * plan.model.hidden * element_bytes;
  return std::max<std::int64_t>(4 * message, 1 << 20);
}

std::optional<models::Profile> measure_cpu_profile(const ValidationPlan& plan, Transport& transport, double wait_s,
                                                   const ProgressFn& progress) {
  std::optional<models::Profile> profile;
  if (transport.rank() == 0) profile = profiler::profile_layers_cpu(plan_profile_request(plan, progress));
  transport.barrier(wait_s);
  if (transport.ranks() > 1) {
    models::LinkProfile links = profiler::measure_links_with_mpi(plan_link_sweep_bytes(plan, sizeof(float)), 3, 20);
    if (profile) profile->links = std::move(links);
  }
  return profile;
}

}  // namespace pipeplan::validate
