#include "step/zero_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "common/error.h"
#include "sim/generators/registry.h"

namespace pipeplan::step {

bool zero_runs_with(models::ZeroStage zero, int pp, std::string_view schedule) {
  return zero_runs_with(zero, pp, sim::find_schedule_family(schedule));
}

bool zero_runs_with(models::ZeroStage zero, int pp, const sim::ScheduleFamily& family) {
  return zero < models::ZeroStage::kGradients || pp == 1 || sim::runs_in_pytorch_pipelining(family);
}

void check_zero_pipeline(models::ZeroStage zero, int pp, std::string_view schedule) {
  if (zero_runs_with(zero, pp, schedule)) return;
  std::vector<std::string_view> runnable;
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    if (sim::runs_in_pytorch_pipelining(family)) runnable.push_back(family.name);
  }
  const sim::ScheduleFamily& family = sim::find_schedule_family(schedule);
  const std::string_view where = family.name == "naive" ? "no framework runs it"
                                                        : "it runs in the Zero Bubble fork of Megatron-LM, whose "
                                                          "distributed optimizer is ZeRO-1";
  throw InputError(
      fmt::format("--zero {} on {} pipeline ranks runs as PyTorch's pipelining runs FSDP, on its "
                  "schedules ({}); {} is not one ({}): use --zero 1, or one of those schedules",
                  static_cast<int>(zero), pp, fmt::join(runnable, ", "), family.name, where));
}

}  // namespace pipeplan::step
