#include "validate/cuda/nccl_link.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "profiler/cuda/cuda_check.h"
#include "validate/cuda/nccl_check.h"
#include "validate/transport.h"

namespace pipeplan::validate {

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

NcclLink::NcclLink(const P2pLink& route, int rank, const ncclUniqueId& id, double timeout_s)
    : route_(route),
      peer_(rank == route.from_rank ? route.to_rank : route.from_rank),
      sends_(rank == route.from_rank),
      timeout_s_(timeout_s) {
  // NCCL kernels go first where they compete with compute for the GPU, as
  // PyTorch's communication streams do.
  int least = 0, greatest = 0;
  PIPEPLAN_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  PIPEPLAN_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns; waits are polled against a deadline
  try {
    PIPEPLAN_NCCL(ncclCommInitRankConfig(&comm_, 2, id, sends_ ? 0 : 1, &config));
    wait_ready("join the communicator", steady_now_s() + timeout_s_);
  } catch (...) {
    abort();
    cudaStreamDestroy(stream_);
    throw;
  }
}

NcclLink::~NcclLink() {
  abort();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);  // nothing to report from a destructor
}

void NcclLink::abort() noexcept {
  if (comm_ != nullptr) ncclCommAbort(comm_);  // frees it, in the background if need be
  comm_ = nullptr;
}

void NcclLink::check() {
  ncclResult_t state = ncclSuccess;
  PIPEPLAN_NCCL(ncclCommGetAsyncError(comm_, &state));
  if (state == ncclSuccess || state == ncclInProgress) return;
  const std::string message = fmt::format("NCCL failed on {} with rank {}: {} ({})", link_name(route_), peer_,
                                          ncclGetErrorString(state), ncclGetLastError(comm_));
  abort();
  if (state == ncclRemoteError) throw RankFailure(peer_, message + ": it stalled or died");
  throw std::runtime_error(message);
}

void NcclLink::stalled(const std::string& what) {
  abort();
  throw RankFailure(peer_, fmt::format("rank {} {} for {:g} s on {}: it stalled or died", peer_, what, timeout_s_,
                                       link_name(route_)));
}

void NcclLink::wait_ready(const char* doing, double deadline) {
  for (;;) {
    ncclResult_t state = ncclInProgress;
    PIPEPLAN_NCCL(ncclCommGetAsyncError(comm_, &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) check();
    if (steady_now_s() > deadline) stalled(fmt::format("did not {}", doing));
    std::this_thread::yield();
  }
}

void NcclLink::send(const void* data, std::size_t bytes, CudaEvent& done, double deadline) {
  if (!sends_) throw std::logic_error(fmt::format("{}: this rank receives on it", link_name(route_)));
  if (PIPEPLAN_NCCL(ncclSend(data, bytes, ncclUint8, 1, comm_, stream_)) == ncclInProgress) {
    wait_ready("connect", deadline);
  }
  done.record(stream_);  // only now: NCCL may launch its kernel in the background until ready
}

void NcclLink::receive(void* data, std::size_t bytes, CudaEvent& done, double deadline) {
  if (sends_) throw std::logic_error(fmt::format("{}: this rank sends on it", link_name(route_)));
  if (PIPEPLAN_NCCL(ncclRecv(data, bytes, ncclUint8, 0, comm_, stream_)) == ncclInProgress) {
    wait_ready("connect", deadline);
  }
  done.record(stream_);
}

void NcclLink::close(double deadline) {
  if (comm_ == nullptr) return;
  if (PIPEPLAN_NCCL(ncclCommFinalize(comm_)) == ncclInProgress) wait_ready("finish", deadline);
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  PIPEPLAN_NCCL(ncclCommDestroy(comm));  // local only once finalized; the comm is gone either way
}

}  // namespace pipeplan::validate
