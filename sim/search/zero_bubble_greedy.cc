#include "sim/search/zero_bubble_greedy.h"

#include <algorithm>
#include <array>
#include <utility>

#include "sim/generators/support.h"

namespace pipeplan::sim::detail {
namespace {

int kind_index(OpKind kind) { return kind == OpKind::kForward ? 0 : kind == OpKind::kBackwardInput ? 1 : 2; }

// The order is built round by round: every rank's next forward (first to
// last rank), then every rank's next I (last to first), each preceded by
// the Ws that fit in its wait or that memory asks for. Start times are
// estimated as ops are placed: a rank runs its ops in order, an F needs the
// previous rank's F and its message, an I the next rank's I and its message
// (the last rank's its own F), a W its own I.
class GreedyOrder {
 public:
  GreedyOrder(const ZeroBubbleSearchRequest& request, GreedyChoices choices)
      : request_(request),
        choices_(choices),
        ranks_(static_cast<int>(request.costs.stages.size())),
        m_(request.microbatches),
        schedule_(make_schedule("ZBAuto", {ranks_, m_, 1, 0}, StagePlacement::kLoop)),
        state_(static_cast<std::size_t>(ranks_), RankState{{}, 0, 0, 0, {}, {}}) {
    for (RankState& rank : state_) {
      rank.forward_end.assign(static_cast<std::size_t>(m_), 0.0);
      rank.input_grad_end.assign(static_cast<std::size_t>(m_), 0.0);
    }
  }

  std::optional<Schedule> build() {
    for (int rank = 0; rank < ranks_; ++rank) put(rank, OpKind::kForward);
    const std::vector<int> warmup = warmup_forwards();
    for (int rank = 0; rank < ranks_; ++rank) {
      for (int k = 0; k < warmup[static_cast<std::size_t>(rank)]; ++k) put(rank, OpKind::kForward);
    }
    for (int rank = ranks_ - 1; rank >= 0; --rank) put(rank, OpKind::kBackwardInput);
    for (int round = 1; round < m_; ++round) {
      const std::vector<bool> forward = steady_forwards();
      for (int rank = 0; rank < ranks_; ++rank) {
        if (!forward[static_cast<std::size_t>(rank)]) continue;
        if (!make_room(rank, stage(rank).activation_bytes)) return std::nullopt;
        if (rank > 0) fill_wait(rank, ready_s(rank, OpKind::kForward));
        put(rank, OpKind::kForward);
      }
      for (int rank = ranks_ - 1; rank >= 0; --rank) {
        if (rank < ranks_ - 1) fill_wait(rank, ready_s(rank, OpKind::kBackwardInput));
        // The first rank, its forwards done, has nothing left to overlap
        // its Ws with: they go before its I rather than after the last.
        if (rank == 0 && count(rank, OpKind::kForward) == m_) {
          while (weight_pending(rank)) put(rank, OpKind::kBackwardWeight);
        }
        put(rank, OpKind::kBackwardInput);
      }
    }
    for (int rank = 0; rank < ranks_; ++rank) {
      while (weight_pending(rank)) put(rank, OpKind::kBackwardWeight);
    }
    // Where memory held a rank's warm-up below the next rank's (limits that
    // differ by rank) or a round skipped its forward, its Is may have run
    // ahead of its Fs, or its forwards ended short of m: these choices give
    // no order.
    if (broken_) return std::nullopt;
    for (int rank = 0; rank < ranks_; ++rank) {
      if (count(rank, OpKind::kForward) < m_) return std::nullopt;
    }
    return std::move(schedule_);
  }

 private:
  struct RankState {
    std::array<int, 3> placed;  // F, I, W placed so far
    double end_s;               // when the last placed op ends
    double waited_s;            // idle time after the first forward started
    std::int64_t memory;        // activation bytes held
    std::vector<double> forward_end, input_grad_end;  // by micro-batch
  };

  const StageCost& stage(int rank) const { return request_.costs.stages[static_cast<std::size_t>(rank)]; }
  RankState& at(int rank) { return state_[static_cast<std::size_t>(rank)]; }
  std::int64_t limit(int rank) const { return rank_memory_limit(request_, rank); }
  int count(int rank, OpKind kind) { return at(rank).placed[static_cast<std::size_t>(kind_index(kind))]; }
  double duration_s(int rank, OpKind kind) const { return action_duration_s(stage(rank), kind); }
  bool weight_pending(int rank) { return count(rank, OpKind::kBackwardWeight) < count(rank, OpKind::kBackwardInput); }
  // A message across the boundary after `rank` (an activation forward, its
  // gradient of the same size back).
  double message_s(int rank) const {
    return request_.topology.spec(rank, rank + 1).transfer_time_s(stage(rank).send_bytes);
  }
  // How much longer than this rank the one that waited longest has waited.
  double spare_wait_s(int rank) {
    double most = 0;
    for (const RankState& other : state_) most = std::max(most, other.waited_s);
    return most - at(rank).waited_s;
  }

  // When the next op of `kind` on `rank` has its input.
  double ready_s(int rank, OpKind kind) {
    const auto mb = static_cast<std::size_t>(count(rank, kind));
    switch (kind) {
      case OpKind::kForward: return rank == 0 ? 0 : at(rank - 1).forward_end[mb] + message_s(rank - 1);
      case OpKind::kBackwardInput:
        return rank == ranks_ - 1 ? at(rank).forward_end[mb] : at(rank + 1).input_grad_end[mb] + message_s(rank);
      default: return at(rank).input_grad_end[mb];
    }
  }

  void put(int rank, OpKind kind) {
    RankState& state = at(rank);
    const int mb = count(rank, kind);
    // An I before its micro-batch's F (or a W before its I) breaks the order.
    if (kind != OpKind::kForward && mb >= count(rank, kind == OpKind::kBackwardInput ? OpKind::kForward
                                                                                      : OpKind::kBackwardInput)) {
      broken_ = true;
      return;
    }
    const double start = std::max(state.end_s, ready_s(rank, kind));
    if (state.placed[0] > 0) state.waited_s += start - state.end_s;
    state.end_s = start + duration_s(rank, kind);
    const StageCost& cost = stage(rank);
    if (kind == OpKind::kForward) {
      state.forward_end[static_cast<std::size_t>(mb)] = state.end_s;
      state.memory += cost.activation_bytes;
    } else if (kind == OpKind::kBackwardInput) {
      state.input_grad_end[static_cast<std::size_t>(mb)] = state.end_s;
      state.memory -= cost.activation_bytes - cost.weight_grad_bytes;
    } else {
      state.memory -= cost.weight_grad_bytes;
    }
    schedule_.actions[static_cast<std::size_t>(rank)].push_back({rank, mb, kind});
    ++state.placed[static_cast<std::size_t>(kind_index(kind))];
  }

  // Ws (oldest first) until `bytes` more fit.
  bool make_room(int rank, std::int64_t bytes) {
    while (at(rank).memory + bytes > limit(rank)) {
      if (!weight_pending(rank)) return false;
      put(rank, OpKind::kBackwardWeight);
    }
    return true;
  }

  // Ws in the wait for an input arriving at `arrival`: each that ends by
  // then; then one more for the rest of the wait where leaving it would
  // make this rank the one that waited longest (or always, by choice).
  void fill_wait(int rank, double arrival) {
    while (weight_pending(rank) && at(rank).end_s + duration_s(rank, OpKind::kBackwardWeight) <= arrival) {
      put(rank, OpKind::kBackwardWeight);
    }
    const double wait = arrival - at(rank).end_s;
    if (!weight_pending(rank) || wait <= 0) return;
    if (choices_.fill_every_gap || wait > spare_wait_s(rank)) put(rank, OpKind::kBackwardWeight);
  }

  // Forwards each rank adds after its first, before its first I: as many
  // as its memory holds and the wait for that I's input covers, walking up
  // from the last rank (whose I follows its own F); then each rank fewer
  // than the one before it, unless it has run out of forwards.
  std::vector<int> warmup_forwards() {
    std::vector<int> extra(static_cast<std::size_t>(ranks_), 0);
    double backward_end = at(ranks_ - 1).end_s + duration_s(ranks_ - 1, OpKind::kBackwardInput);
    for (int rank = ranks_ - 2; rank >= 0; --rank) {
      const double arrival = backward_end + message_s(rank);
      const double forward = duration_s(rank, OpKind::kForward);
      double t = at(rank).end_s;
      std::int64_t memory = at(rank).memory;
      int added = 0;
      while (1 + added < m_ && memory + stage(rank).activation_bytes <= limit(rank)) {
        if (choices_.warmup_may_delay_backward ? t >= arrival : t + forward > arrival) break;
        t += forward;
        memory += stage(rank).activation_bytes;
        ++added;
      }
      extra[static_cast<std::size_t>(rank)] = added;
      backward_end = std::max(t, arrival) + duration_s(rank, OpKind::kBackwardInput);
    }
    for (std::size_t r = 1; r < extra.size(); ++r) {
      if (1 + extra[r] < m_) extra[r] = std::min(extra[r], std::max(0, extra[r - 1] - 1));
    }
    return extra;
  }

  // Which ranks run a forward this round: each with forwards left, unless
  // (backward_first) it is two or more ahead of the next rank and the
  // forward would hold up the I coming back from it; never a rank whose
  // next rank does not (a rank never runs fewer forwards than the next).
  std::vector<bool> steady_forwards() {
    std::vector<bool> forward(static_cast<std::size_t>(ranks_), false);
    for (int rank = 0; rank < ranks_; ++rank) {
      const int done = count(rank, OpKind::kForward);
      if (done >= m_) continue;
      forward[static_cast<std::size_t>(rank)] =
          !choices_.backward_first || rank + 1 == ranks_ || done < count(rank + 1, OpKind::kForward) + 2 ||
          forward_fits_before_backward(rank);
    }
    for (int rank = ranks_ - 2; rank >= 0; --rank) {
      if (!forward[static_cast<std::size_t>(rank + 1)]) forward[static_cast<std::size_t>(rank)] = false;
    }
    return forward;
  }

  // Whether `rank` should run its forward before the I the next rank is
  // about to send back: yes if the forward (and the Ws it needs room from)
  // ends before that I arrives; no if the rank is already past it or the
  // wait it would otherwise leave fits in its spare wait.
  bool forward_fits_before_backward(int rank) {
    const RankState& next = at(rank + 1);
    const double backward_back = next.end_s + duration_s(rank + 1, OpKind::kForward) +
                                 duration_s(rank + 1, OpKind::kBackwardInput) + message_s(rank);
    const double end = at(rank).end_s;
    if (end >= backward_back) return false;
    double weights_s = 0;
    std::int64_t memory = at(rank).memory + stage(rank).activation_bytes;
    for (int w = count(rank, OpKind::kBackwardWeight); memory > limit(rank) && w < count(rank, OpKind::kBackwardInput);
         ++w) {
      weights_s += duration_s(rank, OpKind::kBackwardWeight);
      memory -= stage(rank).weight_grad_bytes;
    }
    if (end + duration_s(rank, OpKind::kForward) + weights_s <= backward_back) return true;
    return backward_back - end > spare_wait_s(rank);
  }

  const ZeroBubbleSearchRequest& request_;
  GreedyChoices choices_;
  int ranks_, m_;
  Schedule schedule_;
  bool broken_ = false;  // an action was due before what it needs (build() gives no order)
  std::vector<RankState> state_;
};

}  // namespace

std::optional<Schedule> greedy_zero_bubble_order(const ZeroBubbleSearchRequest& request, GreedyChoices choices) {
  return GreedyOrder(request, choices).build();
}

}  // namespace pipeplan::sim::detail
