// GPipe (Huang et al. 2019, "GPipe: Efficient Training of Giant Neural
// Networks using Pipeline Parallelism"): every rank runs all m forwards, then
// all m backwards, in micro-batch order as PyTorch's ScheduleGPipe does.
// Every stage holds m micro-batches of activations at the peak.
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {

Schedule generate_gpipe(const PipelineShape& shape) {
  require_virtual_stages(shape, "GPipe", 1);
  Schedule schedule = make_schedule("GPipe", shape, StagePlacement::kLoop);
  for (int rank = 0; rank < shape.ranks; ++rank) {
    auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
    for (int mb = 0; mb < shape.microbatches; ++mb) actions.push_back({rank, mb, OpKind::kForward});
    for (int mb = 0; mb < shape.microbatches; ++mb) actions.push_back({rank, mb, OpKind::kBackward});
  }
  return schedule;
}

}  // namespace pipeplan::sim
