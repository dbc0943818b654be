#include "planner/zero_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "common/error.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {
namespace {

// torch.distributed.pipelining's schedule classes, by pipeplan's names.
constexpr std::array<std::string_view, 7> kPytorchSchedules = {
    "GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"};

}  // namespace

bool zero_runs_with(models::ZeroStage zero, std::string_view schedule) {
  if (zero < models::ZeroStage::kGradients) return true;
  const std::string_view family = sim::find_schedule_family(schedule).name;
  return std::find(kPytorchSchedules.begin(), kPytorchSchedules.end(), family) != kPytorchSchedules.end();
}

void check_zero_schedule(models::ZeroStage zero, std::string_view schedule) {
  if (zero_runs_with(zero, schedule)) return;
  throw InputError(fmt::format("--zero {} with {}: ZeRO-2 and ZeRO-3 run with pipeline parallelism under FSDP and "
                               "PyTorch's pipelining schedules ({}); {}'s framework shards the optimizer only (use "
                               "--zero 1 or one of those schedules)",
                               static_cast<int>(zero), sim::find_schedule_family(schedule).name,
                               fmt::join(kPytorchSchedules, ", "), sim::find_schedule_family(schedule).name));
}

}  // namespace pipeplan::planner
