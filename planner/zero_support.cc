#include "planner/zero_support.h"

#include <fmt/format.h>

#include "common/error.h"

namespace pipeplan::planner {

bool zero_runs_with(models::ZeroStage zero, int pp) { return zero < models::ZeroStage::kGradients || pp == 1; }

void check_zero_pipeline(models::ZeroStage zero, int pp) {
  if (zero_runs_with(zero, pp)) return;
  throw InputError(fmt::format("--zero {} with {} pipeline ranks: ZeRO-2 and ZeRO-3 are costed without pipelining "
                               "(DeepSpeed's and FSDP's per-micro-batch sync); under pipelining frameworks shard the "
                               "optimizer only or sync once per step, which is not modelled: use --zero 1, or one "
                               "pipeline rank",
                               static_cast<int>(zero), pp));
}

}  // namespace pipeplan::planner
