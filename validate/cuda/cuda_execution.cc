#include "validate/cuda/cuda_execution.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "common/error.h"
#include "profiler/cuda/cuda_check.h"
#include "validate/cuda/cuda_backend.h"
#include "validate/rank_loop.h"

namespace pipeplan::validate {
namespace {

int rank_device(const Transport& transport) {
  require_cuda_backend();
  return transport.local_rank() % profiler::cuda_device_count();
}

std::vector<double> device_uuid(int device) {
  cudaDeviceProp properties{};
  PIPEPLAN_CUDA(cudaGetDeviceProperties(&properties, device));
  std::vector<double> bytes;
  for (const char byte : properties.uuid.bytes) bytes.push_back(static_cast<unsigned char>(byte));
  return bytes;
}

// NCCL cannot put two ranks of a communicator on one GPU (and two ranks
// on one GPU would time each other's work): rank 0 compares every rank's
// GPU and all refuse together.
void check_one_gpu_per_rank(Transport& transport, int device) {
  const std::vector<std::vector<double>> uuids = transport.gather(device_uuid(device));
  std::vector<double> shared{-1, -1};
  for (std::size_t a = 0; a < uuids.size() && shared[0] < 0; ++a) {
    for (std::size_t b = a + 1; b < uuids.size(); ++b) {
      if (uuids[a] == uuids[b]) {
        shared = {static_cast<double>(a), static_cast<double>(b)};
        break;
      }
    }
  }
  shared = transport.broadcast(shared);
  if (shared.size() == 2 && shared[0] >= 0) {
    throw InputError(fmt::format(
        "ranks {} and {} run on the same GPU: --backend cuda needs one GPU per rank (launch at most as many ranks "
        "per host as it has GPUs, and leave CUDA_VISIBLE_DEVICES listing them all, or give each rank its own)",
        static_cast<int>(shared[0]), static_cast<int>(shared[1])));
  }
}

}  // namespace

void require_cuda_backend() {
  if (profiler::cuda_device_count() == 0) {
    throw InputError(
        fmt::format("--backend cuda: no CUDA GPU found ({}): use --backend cpu", profiler::cuda_unavailable_reason()));
  }
}

RankResult execute_rank_cuda(const models::ModelConfig& model, const models::TrainingShape& shape,
                             const sim::Schedule& lowered, const step::StageSplit& split, Transport& transport,
                             const ExecutionSettings& settings) {
  detail::check_settings(settings);
  const int device = rank_device(transport);
  auto context = std::make_shared<profiler::DeviceContext>(device);
  if (transport.ranks() > 1) check_one_gpu_per_rank(transport, device);
  // The links first: every rank reaches them together, before building
  // layers takes each rank its own time.
  const std::int64_t rows = static_cast<std::int64_t>(shape.micro_batch_size) * shape.seq_len;
  NcclChannel channel(lowered, transport, context, rows, model.hidden);
  BasicStageRunner<CudaBackend> runner(CudaBackend(context), model, shape, lowered, split, transport.rank(),
                                       {settings.seed});
  RankResult result = detail::run_rank(runner, model, shape, lowered, transport, channel, settings);
  channel.close();
  return result;
}

}  // namespace pipeplan::validate
