// The stage runner on the GPU backend.
#include "validate/cuda/cuda_backend.h"
#include "validate/stage_runner_impl.h"

namespace pipeplan::validate {

template class BasicStageRunner<CudaBackend>;

}  // namespace pipeplan::validate
