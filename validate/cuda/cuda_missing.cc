// The GPU backend's entry points in a build without CUDA: each says so.
#include "common/error.h"
#include "validate/cuda/cuda_execution.h"
#include "validate/cuda/cuda_prediction.h"

namespace pipeplan::validate {
namespace {

[[noreturn]] void missing() {
  throw InputError(
      "--backend cuda: this pipeplan was built without CUDA (nvcc not found); use --backend cpu, or "
      "rebuild where /usr/local/cuda/bin/nvcc exists");
}

}  // namespace

void require_cuda_backend() { missing(); }

RankResult execute_rank_cuda(const models::ModelConfig&, const models::TrainingShape&, const sim::Schedule&,
                             const step::StageSplit&, Transport&, const ExecutionSettings&) {
  missing();
}

std::optional<models::Profile> measure_cuda_profile(const ValidationPlan&, Transport&, double, const ProgressFn&) {
  missing();
}

}  // namespace pipeplan::validate
