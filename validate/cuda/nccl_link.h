// One point-to-point link of the GPU backend (p2p_links.h): a two-rank
// non-blocking NCCL communicator (the sender is its rank 0) and a stream of
// its own, so that a send never waits behind compute and the two
// directions between a pair of ranks never wait for each other. Every wait
// on it is polled against a deadline; a peer that does not answer in time
// has the communicator aborted and is named in a RankFailure.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "validate/cuda/cuda_event.h"
#include "validate/p2p_links.h"

namespace pipeplan::validate {

class NcclLink {
 public:
  // Joins the link's communicator (both ranks call it with the same id) on
  // the current device, within `timeout_s`.
  NcclLink(const P2pLink& route, int rank, const ncclUniqueId& id, double timeout_s);
  ~NcclLink();  // aborts the communicator unless close() finished it
  NcclLink(const NcclLink&) = delete;
  NcclLink& operator=(const NcclLink&) = delete;

  const P2pLink& route() const { return route_; }
  int peer() const { return peer_; }
  bool sends() const { return sends_; }
  cudaStream_t stream() const { return stream_; }

  // Queues the transfer of `bytes` on the link's stream and returns once
  // NCCL has launched it; `done` is recorded after it.
  void send(const void* data, std::size_t bytes, CudaEvent& done, double deadline);
  void receive(void* data, std::size_t bytes, CudaEvent& done, double deadline);
  // Throws when NCCL reported an error on the link.
  void check();
  // Aborts the communicator and throws RankFailure naming the peer, which
  // did `what` ("sent nothing") for the link's timeout.
  [[noreturn]] void stalled(const std::string& what);
  // Flushes and frees the communicator, the peer doing the same.
  void close(double deadline);

 private:
  // Polls the communicator while NCCL works in the background.
  void wait_ready(const char* doing, double deadline);
  void abort() noexcept;

  P2pLink route_;
  int peer_;
  bool sends_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Seconds on the steady clock, for deadlines.
double steady_now_s();

}  // namespace pipeplan::validate
