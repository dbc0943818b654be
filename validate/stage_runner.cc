#include "validate/stage_runner.h"

#include "validate/stage_runner_impl.h"

namespace pipeplan::validate {

std::int64_t tensor_key(int stage, int mb, int direction, int microbatches) {
  return (static_cast<std::int64_t>(stage) * microbatches + mb) * 2 + direction;
}

TensorId tensor_id(std::int64_t key, int microbatches) {
  const std::int64_t slot = key / 2;
  return {static_cast<int>(slot / microbatches), static_cast<int>(slot % microbatches), static_cast<int>(key % 2)};
}

template class BasicStageRunner<CpuBackend>;

}  // namespace pipeplan::validate
