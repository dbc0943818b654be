// Every NCCL call of the GPU backend goes through PIPEPLAN_NCCL: an error
// throws std::runtime_error naming the call, NCCL's error and its last
// message, and where the call was made. Non-blocking communicators may
// answer ncclInProgress (the call goes on in the background): that is
// returned to the caller, which waits for the communicator to be ready.
#pragma once

#include <nccl.h>

namespace pipeplan::validate {

// Returns ncclSuccess or ncclInProgress; throws on anything else.
ncclResult_t check_nccl(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace pipeplan::validate

#define PIPEPLAN_NCCL(call) ::pipeplan::validate::check_nccl((call), #call, __FILE__, __LINE__)
