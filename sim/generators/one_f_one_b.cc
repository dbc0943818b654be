// 1F1B (PipeDream-Flush; Narayanan et al. 2021, "Efficient Large-Scale
// Language Model Training on GPU Clusters Using Megatron-LM", and Megatron's
// forward_backward_pipelining_without_interleaving): rank r runs
// min(p - r - 1, m) warm-up forwards, then one forward and one backward per
// step, then the remaining backwards. Rank r holds at most min(p - r, m)
// micro-batches of activations.
//
// ZB-H1 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism", Sec. 2.1)
// is the same order with the backward split into I (input gradient) and W
// (weight gradient): stage s follows each (F, I) pair with the oldest
// pending W from its s-th backward on, so later stages start their
// backwards earlier while no stage holds more than 1F1B's activations.
// Bubble (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W).
#include <algorithm>

#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {
namespace {

Schedule one_f_one_b(const char* name, const PipelineShape& shape, bool split_backward) {
  require_virtual_stages(shape, name, 1);
  Schedule schedule = make_schedule(name, shape, StagePlacement::kLoop);
  for (int rank = 0; rank < shape.ranks; ++rank) {
    OneFOneBOrder order;
    for (int mb = 0; mb < shape.microbatches; ++mb) {
      order.forwards.push_back({rank, mb, OpKind::kForward});
      order.backwards.push_back({rank, mb, OpKind::kBackward});
    }
    order.warmup = std::min(shape.ranks - rank - 1, shape.microbatches);
    order.split_backward = split_backward;
    order.weight_delay = rank;
    schedule.actions[static_cast<std::size_t>(rank)] = expand_one_f_one_b(order);
  }
  return schedule;
}

}  // namespace

Schedule generate_1f1b(const PipelineShape& shape) { return one_f_one_b("1F1B", shape, false); }

Schedule generate_zbh1(const PipelineShape& shape) { return one_f_one_b("ZBH1", shape, true); }

}  // namespace pipeplan::sim
