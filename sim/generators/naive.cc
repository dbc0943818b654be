// Naive model parallelism: no micro-batching. The whole batch passes
// forward through every stage, then backward; only one stage works at a time
// (GPipe, Huang et al. 2019, Fig. 2b). Represented as one micro-batch that
// carries all m of the user's micro-batches (microbatch_scale = m), so costs
// given per micro-batch scale up.
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {

Schedule generate_naive(const PipelineShape& shape) {
  require_virtual_stages(shape, "naive", 1);
  PipelineShape whole_batch = shape;
  whole_batch.microbatches = 1;
  Schedule schedule = make_schedule("naive", whole_batch, StagePlacement::kLoop);
  schedule.microbatch_scale = shape.microbatches;
  for (int rank = 0; rank < shape.ranks; ++rank) {
    schedule.actions[static_cast<std::size_t>(rank)] = {{rank, 0, OpKind::kForward},
                                                        {rank, 0, OpKind::kBackward}};
  }
  return schedule;
}

}  // namespace pipeplan::sim
