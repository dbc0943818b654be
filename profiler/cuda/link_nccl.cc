// measure_links_nccl: point-to-point sends between the first two GPUs of
// this process over NCCL (one communicator per GPU from ncclCommInitAll),
// over message sizes 8 B .. max_bytes by x4. Each transfer is timed with
// CUDA events from the moment both sides may start (the receiver's stream
// waits on the start event) to the moment the receiver has the data (the
// sender's stream waits on the receiver's completion), and reported as
// nccl-tests reports send/recv: algbw = busbw = bytes / time.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <array>
#include <memory>
#include <vector>

#include "common/error.h"
#include "profiler/backends.h"
#include "profiler/cuda/cuda_check.h"
#include "profiler/cuda/device_tensor.h"
#include "profiler/link_sweep.h"

namespace pipeplan::profiler {
namespace {

void check_nccl(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) throw std::runtime_error(fmt::format("{} failed: {}", call, ncclGetErrorString(status)));
}
#define PIPEPLAN_NCCL(call) check_nccl((call), #call)

// Two GPUs' communicators, streams, buffers and events.
class GpuPair {
 public:
  explicit GpuPair(std::int64_t max_bytes);
  ~GpuPair();
  GpuPair(const GpuPair&) = delete;
  GpuPair& operator=(const GpuPair&) = delete;

  // One message of `bytes` from GPU 0 to GPU 1, in seconds.
  double transfer_seconds(std::int64_t bytes);

 private:
  void release() noexcept;

  std::array<std::shared_ptr<DeviceContext>, 2> contexts_;
  std::array<DeviceTensor, 2> buffers_;
  std::array<ncclComm_t, 2> comms_{};
  cudaEvent_t start_ = nullptr;     // on GPU 0
  cudaEvent_t stop_ = nullptr;      // on GPU 0
  cudaEvent_t received_ = nullptr;  // on GPU 1
};

GpuPair::GpuPair(std::int64_t max_bytes) {
  for (int device = 0; device < 2; ++device) {
    auto& context = contexts_[static_cast<std::size_t>(device)];
    context = std::make_shared<DeviceContext>(device);
    DeviceTensor& buffer = buffers_[static_cast<std::size_t>(device)];
    buffer = DeviceTensor(context, (max_bytes + 3) / 4, 1, DType::kF32);
    // Ones, never zeros: nothing along the way may shortcut empty data.
    PIPEPLAN_CUDA(cudaMemsetAsync(buffer.data(), 1, static_cast<std::size_t>(buffer.bytes()), context->stream()));
    context->synchronize();
  }
  try {
    const int devices[2] = {0, 1};
    PIPEPLAN_NCCL(ncclCommInitAll(comms_.data(), 2, devices));
    PIPEPLAN_CUDA(cudaSetDevice(0));
    PIPEPLAN_CUDA(cudaEventCreate(&start_));
    PIPEPLAN_CUDA(cudaEventCreate(&stop_));
    PIPEPLAN_CUDA(cudaSetDevice(1));
    PIPEPLAN_CUDA(cudaEventCreateWithFlags(&received_, cudaEventDisableTiming));
  } catch (...) {
    release();
    throw;
  }
}

GpuPair::~GpuPair() { release(); }

// Errors while tearing down are dropped: this runs in the destructor.
void GpuPair::release() noexcept {
  for (cudaEvent_t event : {start_, stop_, received_}) {
    if (event != nullptr) cudaEventDestroy(event);
  }
  for (ncclComm_t comm : comms_) {
    if (comm != nullptr) ncclCommDestroy(comm);
  }
}

double GpuPair::transfer_seconds(std::int64_t bytes) {
  cudaStream_t sender = contexts_[0]->stream(), receiver = contexts_[1]->stream();
  const auto count = static_cast<std::size_t>(bytes);
  PIPEPLAN_CUDA(cudaSetDevice(0));
  PIPEPLAN_CUDA(cudaEventRecord(start_, sender));
  PIPEPLAN_CUDA(cudaSetDevice(1));
  PIPEPLAN_CUDA(cudaStreamWaitEvent(receiver, start_, 0));
  PIPEPLAN_NCCL(ncclGroupStart());
  PIPEPLAN_NCCL(ncclSend(buffers_[0].data(), count, ncclUint8, 1, comms_[0], sender));
  PIPEPLAN_NCCL(ncclRecv(buffers_[1].data(), count, ncclUint8, 0, comms_[1], receiver));
  PIPEPLAN_NCCL(ncclGroupEnd());
  PIPEPLAN_CUDA(cudaSetDevice(1));
  PIPEPLAN_CUDA(cudaEventRecord(received_, receiver));
  PIPEPLAN_CUDA(cudaSetDevice(0));
  PIPEPLAN_CUDA(cudaStreamWaitEvent(sender, received_, 0));
  PIPEPLAN_CUDA(cudaEventRecord(stop_, sender));
  PIPEPLAN_CUDA(cudaEventSynchronize(stop_));
  float milliseconds = 0;
  PIPEPLAN_CUDA(cudaEventElapsedTime(&milliseconds, start_, stop_));
  return milliseconds * 1e-3;
}

}  // namespace

models::LinkProfile measure_links_nccl(std::int64_t max_bytes, int warmup, int repeats) {
  if (max_bytes < 8) throw InputError("--max-bytes must be at least 8 B");
  const int gpus = cuda_device_count();
  if (gpus < 2) {
    throw InputError(
        fmt::format("the nccl link sweep needs 2 GPUs in this machine, found {}; between machines use "
                    "--backend mpi",
                    gpus));
  }
  GpuPair pair(max_bytes);
  return sweep_link("nccl", max_bytes, warmup, repeats,
                    [&](std::int64_t bytes) { return pair.transfer_seconds(bytes); });
}

}  // namespace pipeplan::profiler
