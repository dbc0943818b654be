// Stand-ins for backends this build lacks: each call says what is missing
// and how to get it. Compiled only when the backend is absent.
#include <fmt/format.h>

#include "common/error.h"
#include "profiler/backends.h"

namespace pipeplan::profiler {

#ifndef PIPEPLAN_HAVE_CUDA
namespace {
[[noreturn]] void refuse_without_cuda() {
  throw InputError("this pipeplan was built without CUDA (nvcc not found): use --backend cpu, or rebuild where "
                   "/usr/local/cuda/bin/nvcc exists");
}
}  // namespace

models::Profile profile_layers_cuda(const ProfileRequest&) { refuse_without_cuda(); }

GemmSweep measure_gemms_cuda(const std::vector<GemmSize>&, int, int) { refuse_without_cuda(); }

models::LinkProfile measure_links_nccl(std::int64_t, int, int) {
  throw InputError("this pipeplan was built without CUDA and NCCL: use --backend mpi, or rebuild with CUDA");
}

bool built_with_cuda() { return false; }
#endif

#ifndef PIPEPLAN_HAVE_MPI
models::LinkProfile measure_links_with_mpi(std::int64_t, int, int) {
  throw InputError("this pipeplan was built without MPI: install libopenmpi-dev and rebuild");
}

bool built_with_mpi() { return false; }
#endif

}  // namespace pipeplan::profiler
