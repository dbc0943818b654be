// How the GPU backend moves activations and gradients between ranks: NCCL
// send/recv of bf16 device tensors, one link per stage boundary and
// direction (nccl_link.h). A send runs on its link's stream after an event
// of the layer stream, so compute never waits for it, and the tensor is
// kept until the host sees the transfer done; a receive blocks the host
// until the tensor is there (so its record shows the wait), polled against
// the deadline. A single-rank run has no links and touches no NCCL.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "profiler/cuda/device_context.h"
#include "profiler/cuda/device_tensor.h"
#include "sim/schedule.h"
#include "validate/cuda/cuda_event.h"
#include "validate/cuda/nccl_link.h"
#include "validate/transport.h"

namespace pipeplan::validate {

class NcclChannel {
 public:
  // Every rank constructs it at the same point (it talks over `control`):
  // refuses a schedule whose links do not pair their sends and receives in
  // order (check_p2p_order), then joins this rank's links. Tensors are
  // rows x cols bf16.
  NcclChannel(const sim::Schedule& lowered, Transport& control, std::shared_ptr<profiler::DeviceContext> context,
              std::int64_t rows, std::int64_t cols);
  ~NcclChannel();  // aborts what close() did not finish
  NcclChannel(const NcclChannel&) = delete;
  NcclChannel& operator=(const NcclChannel&) = delete;

  // `key` is tensor_key's (stage_runner.h): it names the link.
  void send(int to_rank, std::int64_t key, profiler::DeviceTensor tensor);
  profiler::DeviceTensor receive(int from_rank, std::int64_t key, std::int64_t rows, std::int64_t cols);
  void finish_sends();  // every send of this rank delivered
  // Flushes and frees the links, with the other ranks (after the last iteration).
  void close();

 private:
  struct Sending {
    NcclLink* link;
    profiler::DeviceTensor tensor;  // kept alive until the link is done with it
    CudaEvent done;
  };

  NcclLink& link_for(std::int64_t key, int peer, bool sending);
  void warm_up(NcclLink& link);
  // Polls `event` until done; lets pending sends progress; names the peer of
  // `link` as having done `what` when the deadline passes.
  void await(const CudaEvent& event, NcclLink& link, double deadline, const std::string& what);
  void progress_sends();

  std::shared_ptr<profiler::DeviceContext> context_;
  int microbatches_;
  std::int64_t rows_;
  std::int64_t cols_;
  double timeout_s_;
  std::list<Sending> sending_;
  std::vector<std::unique_ptr<NcclLink>> links_;        // this rank's, in p2p_links' order
  std::map<std::pair<int, int>, NcclLink*> by_tensor_;  // (direction, receiving stage) -> its link
};

}  // namespace pipeplan::validate
