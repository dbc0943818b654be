#include "models/training_shape.h"

#include <fmt/format.h>

#include "common/error.h"

namespace pipeplan::models {

void TrainingShape::apply(const RuntimeFlags& flags) {
  // The overlaps are of a once-per-step sync (no sharding, the distributed
  // optimizer, pipelined ZeRO-2/3 as FSDP overlaps it); ZeRO-2/3 without
  // pipelining reduce each micro-batch's gradients beside the backward anyway.
  overlap_grad_reduce =
      flags.overlap_grad_reduce && weight_replicas() > 1 && (zero == ZeroStage::kNone || shards_once_per_step());
  overlap_param_gather = flags.overlap_param_gather && overlap_grad_reduce && shards_once_per_step();
  grad_reduce_in_bf16 = flags.grad_reduce_in_bf16;
  tp_comm_overlap = flags.tp_comm_overlap && sequence_parallel && tp > 1;
  fp8 = flags.fp8;
  moe_a2a_overlap = flags.moe_a2a_overlap;
}

MoeDispatcher parse_moe_dispatcher(std::string_view text, std::string_view field) {
  if (text == "alltoall") return MoeDispatcher::kAllToAll;
  if (text == "deepep") return MoeDispatcher::kDeepEp;
  throw InputError(fmt::format("{} must be alltoall or deepep, got '{}'", field, text));
}

std::string_view moe_dispatcher_name(MoeDispatcher dispatcher) {
  return dispatcher == MoeDispatcher::kDeepEp ? "deepep" : "alltoall";
}

}  // namespace pipeplan::models
