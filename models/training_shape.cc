#include "models/training_shape.h"

namespace pipeplan::models {

void TrainingShape::apply(const RuntimeFlags& flags) {
  // The overlaps are of a once-per-step sync (no sharding, the distributed
  // optimizer, pipelined ZeRO-2/3 as FSDP overlaps it); ZeRO-2/3 without
  // pipelining reduce each micro-batch's gradients beside the backward anyway.
  runtime = flags;
  runtime.overlap_grad_reduce =
      flags.overlap_grad_reduce && weight_replicas() > 1 && (zero == ZeroStage::kNone || shards_once_per_step());
  runtime.overlap_param_gather = flags.overlap_param_gather && runtime.overlap_grad_reduce && shards_once_per_step();
  runtime.tp_comm_overlap = flags.tp_comm_overlap && sequence_parallel && tp > 1;
  runtime.optimizer_states_in_bf16 = flags.optimizer_states_in_bf16 && zero == ZeroStage::kOptimizer;
  runtime.master_weights_in_bf16 = flags.master_weights_in_bf16 && zero == ZeroStage::kOptimizer;
  runtime.fp8_param_gather = flags.fp8_param_gather && flags.fp8 && zero == ZeroStage::kOptimizer;
}

TrainingShape shape_of(const JobLayout& layout, int seq_len) {
  check_layout_counts(layout);
  TrainingShape shape;
  static_cast<RankLayout&>(shape) = layout;
  shape.seq_len = seq_len;
  shape.pipelined = layout.pp > 1;
  shape.pipeline_first_ranks = layout.pipeline_first ? layout.pp : 0;
  shape.apply(layout.runtime);
  return shape;
}

}  // namespace pipeplan::models
