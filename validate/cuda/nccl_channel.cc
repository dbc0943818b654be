#include "validate/cuda/nccl_channel.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "profiler/cuda/cuda_check.h"
#include "validate/cuda/nccl_check.h"
#include "validate/p2p_links.h"
#include "validate/stage_runner.h"

namespace pipeplan::validate {
namespace {

// Rank 0 makes one id per link and broadcasts them (as bytes in doubles).
std::vector<ncclUniqueId> share_ids(Transport& control, std::size_t count) {
  std::vector<double> encoded;
  if (control.rank() == 0) {
    for (std::size_t i = 0; i < count; ++i) {
      ncclUniqueId id;
      PIPEPLAN_NCCL(ncclGetUniqueId(&id));
      for (const char byte : id.internal) encoded.push_back(static_cast<unsigned char>(byte));
    }
  }
  encoded = control.broadcast(encoded);
  if (encoded.size() != count * NCCL_UNIQUE_ID_BYTES) {
    throw std::runtime_error(
        fmt::format("rank 0 sent {} bytes of NCCL ids, expected {}", encoded.size(), count * NCCL_UNIQUE_ID_BYTES));
  }
  std::vector<ncclUniqueId> ids(count);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t b = 0; b < NCCL_UNIQUE_ID_BYTES; ++b) {
      ids[i].internal[b] = static_cast<char>(static_cast<unsigned char>(encoded[i * NCCL_UNIQUE_ID_BYTES + b]));
    }
  }
  return ids;
}

// The link's stream waits for the work queued on `stream` so far.
void follow(cudaStream_t link, cudaStream_t stream) {
  CudaEvent mark;
  mark.record(stream);
  PIPEPLAN_CUDA(cudaStreamWaitEvent(link, mark.get(), 0));
}

}  // namespace

NcclChannel::NcclChannel(const sim::Schedule& lowered, Transport& control,
                         std::shared_ptr<profiler::DeviceContext> context, std::int64_t rows, std::int64_t cols)
    : context_(std::move(context)),
      microbatches_(lowered.microbatches),
      rows_(rows),
      cols_(cols),
      timeout_s_(control.timeout_s()) {
  check_p2p_order(lowered);
  if (control.ranks() == 1) return;
  const std::vector<P2pLink> routes = p2p_links(lowered);
  const std::vector<ncclUniqueId> ids = share_ids(control, routes.size());
  PIPEPLAN_CUDA(cudaSetDevice(context_->device()));
  // Every rank joins and warms up its links in the one order p2p_links
  // gives, each before the next: a rank only ever waits on the first link
  // of that order still pending anywhere, whose two ranks both reach it, so
  // none waits forever on another.
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const P2pLink& route = routes[i];
    if (route.from_rank != control.rank() && route.to_rank != control.rank()) continue;
    NcclLink& link = *links_.emplace_back(std::make_unique<NcclLink>(route, control.rank(), ids[i], timeout_s_));
    warm_up(link);
    by_tensor_[{route.direction, route.receiving_stage}] = &link;
  }
}

NcclChannel::~NcclChannel() {
  links_.clear();    // aborts any transfer still running
  sending_.clear();  // then frees its buffers
}

// One tensor-sized message: NCCL connects a link on its first transfer and
// that needs both ranks, so it is done here, in order, rather than inside
// a send of the run.
void NcclChannel::warm_up(NcclLink& link) {
  profiler::DeviceTensor buffer(context_, rows_, cols_, profiler::DType::kBf16);
  buffer.set_zero();
  const double deadline = steady_now_s() + timeout_s_;
  follow(link.stream(), context_->stream());
  CudaEvent done;
  const auto bytes = static_cast<std::size_t>(buffer.bytes());
  if (link.sends()) {
    link.send(buffer.data(), bytes, done, deadline);
  } else {
    link.receive(buffer.data(), bytes, done, deadline);
  }
  await(done, link, deadline, link.sends() ? "took nothing" : "sent nothing");
}

NcclLink& NcclChannel::link_for(std::int64_t key, int peer, bool sending) {
  const TensorId id = tensor_id(key, microbatches_);
  const auto found = by_tensor_.find({id.direction, id.stage});
  if (found == by_tensor_.end() || found->second->sends() != sending || found->second->peer() != peer) {
    throw std::logic_error(fmt::format("tensor {} (stage {}, micro-batch {}): no link to {} rank {} here", key,
                                       id.stage, id.microbatch, sending ? "send to" : "receive from", peer));
  }
  return *found->second;
}

void NcclChannel::send(int to_rank, std::int64_t key, profiler::DeviceTensor tensor) {
  NcclLink& link = link_for(key, to_rank, true);
  profiler::check_tensor(link_name(link.route()), "the tensor sent", tensor, rows_, cols_, profiler::DType::kBf16);
  Sending& sending = sending_.emplace_back(Sending{&link, std::move(tensor), CudaEvent{}});
  follow(link.stream(), context_->stream());  // after the tensor is made; the layer stream goes on
  link.send(sending.tensor.data(), static_cast<std::size_t>(sending.tensor.bytes()), sending.done,
            steady_now_s() + timeout_s_);
  progress_sends();
}

profiler::DeviceTensor NcclChannel::receive(int from_rank, std::int64_t key, std::int64_t rows, std::int64_t cols) {
  if (rows != rows_ || cols != cols_) {
    throw std::logic_error(
        fmt::format("tensor {}: asked for {}x{}, the links carry {}x{}", key, rows, cols, rows_, cols_));
  }
  NcclLink& link = link_for(key, from_rank, false);
  const double deadline = steady_now_s() + timeout_s_;
  // The buffer is allocated on the layer stream: the link's stream writes
  // it after that point, and the layer stream reads it after the transfer.
  profiler::DeviceTensor tensor(context_, rows, cols, profiler::DType::kBf16);
  follow(link.stream(), context_->stream());
  CudaEvent arrived;
  link.receive(tensor.data(), static_cast<std::size_t>(tensor.bytes()), arrived, deadline);
  await(arrived, link, deadline, fmt::format("sent nothing (tensor {})", key));
  PIPEPLAN_CUDA(cudaStreamWaitEvent(context_->stream(), arrived.get(), 0));
  return tensor;
}

void NcclChannel::await(const CudaEvent& event, NcclLink& link, double deadline, const std::string& what) {
  while (!event.done()) {
    link.check();
    progress_sends();
    if (steady_now_s() > deadline) link.stalled(what);
    std::this_thread::yield();  // ranks may outnumber cores
  }
}

void NcclChannel::progress_sends() {
  for (auto it = sending_.begin(); it != sending_.end();) {
    if (it->done.done()) {
      it = sending_.erase(it);  // the link is done with the buffer: free it
    } else {
      it->link->check();
      ++it;
    }
  }
}

void NcclChannel::finish_sends() {
  const double deadline = steady_now_s() + timeout_s_;
  for (progress_sends(); !sending_.empty(); progress_sends()) {
    if (steady_now_s() > deadline) sending_.front().link->stalled("took nothing");
    std::this_thread::yield();
  }
}

void NcclChannel::close() {
  finish_sends();
  const double deadline = steady_now_s() + timeout_s_;
  for (const auto& link : links_) link->close(deadline);  // in p2p_links' order, as every rank
}

}  // namespace pipeplan::validate
