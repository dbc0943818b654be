#include "validate/cuda/nccl_check.h"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

namespace pipeplan::validate {

ncclResult_t check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess || status == ncclInProgress) return status;
  throw std::runtime_error(fmt::format("{} failed: {} ({}) ({}:{})", call, ncclGetErrorString(status),
                                       ncclGetLastError(nullptr), std::filesystem::path(file).filename().string(),
                                       line));
}

}  // namespace pipeplan::validate
