// ZB-V (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism", Sec. 6;
// the order of PyTorch's ScheduleZBVZeroBubble): two chunks per rank in a V
// (rank r holds stages r and 2p - 1 - r), backwards split into I and W.
// Rank r warms up with 2(p - r) - 1 chunk-0 forwards, r (chunk 1, chunk 0)
// forward pairs and p - r (F, I, W) triples on chunk 1; the steady state
// alternates (F, I, W) on chunk 0 and chunk 1; the cool-down interleaves
// the remaining Is and fills the tail with Ws. Every rank holds p
// micro-batches of activations (1F1B's first-stage peak) and, when
// T_F = T_B = T_W, the bubble vanishes. The order is built for
// max(2p - 1, m) micro-batches and the extra ones dropped.
#include <algorithm>
#include <deque>

#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {
namespace {

class ZbvRank {
 public:
  ZbvRank(int rank, int ranks, int microbatches)
      : chunk0_(rank), chunk1_(2 * ranks - 1 - rank), planned_(std::max(2 * ranks - 1, microbatches)) {}

  void forward(bool first_chunk) { emit(stage(first_chunk), next_forward(first_chunk)++, OpKind::kForward); }
  void input_grad(bool first_chunk) {
    const int stage_index = stage(first_chunk);
    const int mb = next_backward(first_chunk)++;
    emit(stage_index, mb, OpKind::kBackwardInput);
    (first_chunk ? pending0_ : pending1_).push_back(mb);
  }
  void weight_grad(bool first_chunk) {
    auto& pending = first_chunk ? pending0_ : pending1_;
    emit(stage(first_chunk), pending.front(), OpKind::kBackwardWeight);
    pending.pop_front();
  }
  bool weights_pending(bool first_chunk) const { return !(first_chunk ? pending0_ : pending1_).empty(); }
  bool forwards_left(bool first_chunk) const { return next_forward(first_chunk) < planned_; }
  int forwards_done(bool first_chunk) const { return first_chunk ? forward0_ : forward1_; }

  // Keeps only the micro-batches the user asked for.
  std::vector<Action> take(int microbatches) {
    std::erase_if(actions_, [&](const Action& a) { return a.microbatch >= microbatches; });
    return std::move(actions_);
  }

 private:
  int stage(bool first_chunk) const { return first_chunk ? chunk0_ : chunk1_; }
  int& next_forward(bool first_chunk) { return first_chunk ? forward0_ : forward1_; }
  int next_forward(bool first_chunk) const { return first_chunk ? forward0_ : forward1_; }
  int& next_backward(bool first_chunk) { return first_chunk ? backward0_ : backward1_; }
  void emit(int stage_index, int mb, OpKind kind) { actions_.push_back({stage_index, mb, kind}); }

  int chunk0_, chunk1_, planned_;
  int forward0_ = 0, forward1_ = 0, backward0_ = 0, backward1_ = 0;
  std::deque<int> pending0_, pending1_;
  std::vector<Action> actions_;
};

}  // namespace

Schedule generate_zbv(const PipelineShape& shape) {
  require_virtual_stages(shape, "ZBVZeroBubble", 2);
  const int p = shape.ranks;
  Schedule schedule = make_schedule("ZBVZeroBubble", shape, StagePlacement::kV);
  constexpr bool kChunk0 = true;
  constexpr bool kChunk1 = false;
  for (int rank = 0; rank < p; ++rank) {
    ZbvRank order(rank, p, shape.microbatches);
    for (int i = 0; i < 2 * (p - rank) - 1; ++i) order.forward(kChunk0);
    for (int i = 0; i < rank; ++i) {
      order.forward(kChunk1);
      order.forward(kChunk0);
    }
    for (int i = 0; i < p - rank; ++i) {
      order.forward(kChunk1);
      order.input_grad(kChunk1);
      order.weight_grad(kChunk1);
    }
    // Steady state: until chunk 1 has caught up with chunk 0's forwards.
    while (order.forwards_done(kChunk1) < order.forwards_done(kChunk0) || order.forwards_left(kChunk0)) {
      if (order.forwards_left(kChunk0)) order.forward(kChunk0);
      order.input_grad(kChunk0);
      order.weight_grad(kChunk0);
      order.forward(kChunk1);
      order.input_grad(kChunk1);
      order.weight_grad(kChunk1);
    }
    for (int i = 0; i < rank; ++i) {
      order.input_grad(kChunk0);
      order.input_grad(kChunk1);
    }
    for (int i = 0; i < p - rank; ++i) {
      order.input_grad(kChunk0);
      order.weight_grad(kChunk0);
    }
    while (order.weights_pending(kChunk1)) order.weight_grad(kChunk1);
    while (order.weights_pending(kChunk0)) order.weight_grad(kChunk0);
    schedule.actions[static_cast<std::size_t>(rank)] = order.take(shape.microbatches);
  }
  return schedule;
}

}  // namespace pipeplan::sim
