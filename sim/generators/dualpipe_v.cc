// DualPipeV (DeepSeek-V3 technical report, arXiv 2412.19437, and
// deepseek-ai/DualPipe's DualPipeV, the "cut in half" DualPipe; the order of
// PyTorch's ScheduleDualPipeV): two chunks per rank in a V (rank r holds
// stages r and 2p - 1 - r) and micro-batches fed from one end. Its
// overlapped forward-and-backward pairs ("F&B") become a forward followed
// by a full backward that start together, as one unit, once both inputs
// are there. Bubble (p - 1)(F&B + B - 3W), 2p + 1 chunk activations.
// Needs m >= 2p.
#include <deque>
#include <utility>

#include <fmt/format.h>

#include "common/error.h"
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {
namespace {

class DualPipeVRank {
 public:
  explicit DualPipeVRank(std::pair<int, int> stages) : stage0_(stages.first), stage1_(stages.second) {}

  void forward(int chunk) { actions_.push_back({stage(chunk), next_forward_[chunk]++, OpKind::kForward}); }
  // A full backward (B) or, with `split`, the input-gradient half (I) whose
  // W is queued for later.
  void backward(int chunk, bool split) {
    const int mb = next_backward_[chunk]++;
    actions_.push_back({stage(chunk), mb, split ? OpKind::kBackwardInput : OpKind::kBackward});
    if (split) pending_weights_.push_back({stage(chunk), mb, OpKind::kBackwardWeight});
  }
  void weight_if_pending() {
    if (pending_weights_.empty()) return;
    actions_.push_back(pending_weights_.front());
    pending_weights_.pop_front();
  }
  // DualPipe's overlapped "F&B" pair: one unit that starts once both inputs
  // are there; `overlapped` false runs the two apart.
  void forward_and_backward(int forward_chunk, int backward_chunk, bool overlapped = true) {
    forward(forward_chunk);
    actions_.back().overlapped = overlapped;
    backward(backward_chunk, false);
  }
  std::vector<Action> take() { return std::move(actions_); }

 private:
  int stage(int chunk) const { return chunk == 0 ? stage0_ : stage1_; }

  int stage0_, stage1_;
  int next_forward_[2] = {0, 0};
  int next_backward_[2] = {0, 0};
  std::deque<Action> pending_weights_;
  std::vector<Action> actions_;
};

std::vector<Action> dualpipe_v_rank(int rank, int p, int m) {
  DualPipeVRank order({rank, 2 * p - 1 - rank});
  for (int i = 0; i < 2 * (p - rank - 1); ++i) order.forward(0);
  for (int i = 0; i < rank + 1; ++i) {
    order.forward(0);
    order.forward(1);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    order.backward(1, true);
    order.weight_if_pending();
    order.forward(1);
  }
  // Main phase: F0&B1 then F1&B0; the last rank runs its first pair apart.
  for (int i = 0; i < m - 2 * p + rank + 1; ++i) {
    order.forward_and_backward(0, 1, !(i == 0 && rank == p - 1));
    order.forward_and_backward(1, 0);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    order.backward(1, false);
    order.forward_and_backward(1, 0);
  }
  // The second half of the last backwards splits off W to fill the tail.
  bool split = false;
  const int tail = rank + 1;
  for (int i = 0; i < tail; ++i) {
    if (i == tail / 2 && rank % 2 == 1) split = true;
    order.backward(1, split);
    if (i == tail / 2 && rank % 2 == 0) split = true;
    order.backward(0, split);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    order.weight_if_pending();
    order.backward(0, split);
  }
  for (int i = 0; i < rank + 1; ++i) order.weight_if_pending();
  return order.take();
}

}  // namespace

Schedule generate_dualpipe_v(const PipelineShape& shape) {
  require_virtual_stages(shape, "DualPipeV", 2);
  const int p = shape.ranks;
  const int m = shape.microbatches;
  if (m < 2 * p) {
    throw InputError(fmt::format("DualPipeV needs --microbatches >= 2 x --stages ({} < {}): raise m to {} "
                                 "or lower p to {}",
                                 m, 2 * p, 2 * p, std::max(1, m / 2)));
  }
  Schedule schedule = make_schedule("DualPipeV", shape, StagePlacement::kV);
  for (int rank = 0; rank < p; ++rank) schedule.actions[static_cast<std::size_t>(rank)] = dualpipe_v_rank(rank, p, m);
  return schedule;
}

}  // namespace pipeplan::sim
