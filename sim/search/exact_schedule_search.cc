#include "sim/search/exact_schedule_search.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <utility>

#include "sim/generators/support.h"

namespace pipeplan::sim {
namespace {

constexpr std::array<OpKind, 3> kKinds{OpKind::kForward, OpKind::kBackwardInput, OpKind::kBackwardWeight};

// Start times equal within this much count as a tie (broken by rank).
constexpr double kTie = 1e-12;

class BranchAndBound {
 public:
  BranchAndBound(const ZeroBubbleSearchRequest& request, double upper_bound_s, std::int64_t max_nodes)
      : request_(request),
        ranks_(static_cast<int>(request.costs.stages.size())),
        m_(request.microbatches),
        best_s_(upper_bound_s),
        max_nodes_(max_nodes),
        order_(make_schedule("ZBExact", {ranks_, m_, 1, 0}, StagePlacement::kLoop)),
        ranks_state_(static_cast<std::size_t>(ranks_)) {
    for (int rank = 0; rank < ranks_; ++rank) {
      RankState& state = at(rank);
      const StageCost& cost = stage(rank);
      state.remaining_s = m_ * (cost.forward_s + cost.backward_input_s + cost.backward_weight_s);
      state.forward_end.assign(static_cast<std::size_t>(m_), 0.0);
      state.input_grad_end.assign(static_cast<std::size_t>(m_), 0.0);
    }
  }

  ExactSearchResult run() {
    visit(-1.0, -1);
    ExactSearchResult result;
    result.proven = nodes_ <= max_nodes_;
    result.nodes = nodes_;
    if (found_) {
      result.schedule = std::move(best_);
      result.cost_s = best_s_;
    }
    return result;
  }

 private:
  struct RankState {
    std::array<int, 3> placed{0, 0, 0};
    double end_s = 0;
    double first_start_s = -1;  // of its first op; -1 until placed
    double remaining_s = 0;     // compute left to place
    std::int64_t memory = 0;
    // By micro-batch: placed ops' ends; past them, the bound's earliest
    // ends (rewritten at every node, read only by the bound).
    std::vector<double> forward_end, input_grad_end;
  };
  struct Candidate {
    double start_s;
    int rank;
    OpKind kind;
  };

  const StageCost& stage(int rank) const { return request_.costs.stages[static_cast<std::size_t>(rank)]; }
  RankState& at(int rank) { return ranks_state_[static_cast<std::size_t>(rank)]; }
  static std::size_t index(OpKind kind) {
    return kind == OpKind::kForward ? 0 : kind == OpKind::kBackwardInput ? 1 : 2;
  }
  double message_s(int rank) const {
    return request_.topology.spec(rank, rank + 1).transfer_time_s(stage(rank).send_bytes);
  }

  // When the next op of `kind` on `rank` may start, or nothing when its
  // input is not placed yet, it has none left, or memory has no room.
  std::optional<double> start_of(int rank, OpKind kind) {
    RankState& state = at(rank);
    const int mb = state.placed[index(kind)];
    if (mb >= m_) return std::nullopt;
    const auto k = static_cast<std::size_t>(mb);
    double ready = 0;
    if (kind == OpKind::kForward) {
      if (state.memory + stage(rank).activation_bytes > rank_memory_limit(request_, rank)) return std::nullopt;
      if (rank > 0) {
        if (at(rank - 1).placed[0] <= mb) return std::nullopt;
        ready = at(rank - 1).forward_end[k] + message_s(rank - 1);
      }
    } else if (kind == OpKind::kBackwardInput) {
      if (rank == ranks_ - 1) {
        if (state.placed[0] <= mb) return std::nullopt;
        ready = state.forward_end[k];
      } else {
        if (at(rank + 1).placed[1] <= mb) return std::nullopt;
        ready = at(rank + 1).input_grad_end[k] + message_s(rank);
      }
    } else {
      if (state.placed[1] <= mb) return std::nullopt;
      ready = state.input_grad_end[k];
    }
    return std::max(state.end_s, ready);
  }

  // No order from here ends sooner. Each unplaced op's earliest start
  // follows from its inputs' earliest ends (other ranks' ops as if their
  // ranks were free) and its rank's end; a rank then ends no sooner than
  // running its unplaced ops in order of those starts, which is the
  // fastest any order can (a single machine with release times). A rank
  // with nothing placed spans at least its work.
  double lower_bound_s() {
    const auto mbs = static_cast<std::size_t>(m_);
    for (int rank = 0; rank < ranks_; ++rank) {
      RankState& state = at(rank);
      for (std::size_t k = static_cast<std::size_t>(state.placed[0]); k < mbs; ++k) {
        double start = k > 0 ? state.forward_end[k - 1] : state.end_s;
        if (rank > 0) start = std::max(start, at(rank - 1).forward_end[k] + message_s(rank - 1));
        state.forward_end[k] = std::max(start, state.end_s) + stage(rank).forward_s;
      }
    }
    for (int rank = ranks_ - 1; rank >= 0; --rank) {
      RankState& state = at(rank);
      for (std::size_t k = static_cast<std::size_t>(state.placed[1]); k < mbs; ++k) {
        double start = k > 0 ? state.input_grad_end[k - 1] : state.end_s;
        start = std::max(start, rank == ranks_ - 1 ? state.forward_end[k]
                                                   : at(rank + 1).input_grad_end[k] + message_s(rank));
        state.input_grad_end[k] = std::max(start, state.end_s) + stage(rank).backward_input_s;
      }
    }
    double bound = 0;
    for (int rank = 0; rank < ranks_; ++rank) {
      RankState& state = at(rank);
      if (state.first_start_s < 0) {
        bound = std::max(bound, state.remaining_s);
        continue;
      }
      releases_.clear();
      const StageCost& cost = stage(rank);
      for (std::size_t k = static_cast<std::size_t>(state.placed[0]); k < mbs; ++k) {
        releases_.emplace_back(state.forward_end[k] - cost.forward_s, cost.forward_s);
      }
      for (std::size_t k = static_cast<std::size_t>(state.placed[1]); k < mbs; ++k) {
        releases_.emplace_back(state.input_grad_end[k] - cost.backward_input_s, cost.backward_input_s);
      }
      for (std::size_t k = static_cast<std::size_t>(state.placed[2]); k < mbs; ++k) {
        releases_.emplace_back(state.input_grad_end[k], cost.backward_weight_s);
      }
      std::sort(releases_.begin(), releases_.end());
      double end = state.end_s;
      for (const auto& [release, duration] : releases_) end = std::max(end, release) + duration;
      bound = std::max(bound, end - state.first_start_s);
    }
    return bound;
  }

  void visit(double last_start_s, int last_rank) {
    if (++nodes_ > max_nodes_) return;
    if (lower_bound_s() >= best_s_ * (1 - 1e-12)) return;
    std::vector<Candidate> candidates;
    bool done = true;
    for (int rank = 0; rank < ranks_; ++rank) {
      for (OpKind kind : kKinds) {
        if (at(rank).placed[index(kind)] < m_) done = false;
        const std::optional<double> start = start_of(rank, kind);
        if (!start) continue;
        // Ops go in order of start, then rank: each complete order once.
        if (*start < last_start_s - kTie || (*start <= last_start_s + kTie && rank < last_rank)) continue;
        candidates.push_back({*start, rank, kind});
      }
    }
    if (done) {
      record();
      return;
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.start_s != b.start_s ? a.start_s < b.start_s : a.rank < b.rank;
    });
    for (const Candidate& candidate : candidates) {
      place(candidate);
      visit(candidate.start_s, candidate.rank);
      unplace(candidate);
      if (nodes_ > max_nodes_) return;
    }
  }

  void record() {
    double cost = 0;
    for (RankState& state : ranks_state_) cost = std::max(cost, state.end_s - state.first_start_s);
    if (cost < best_s_ * (1 - 1e-12)) {
      best_s_ = cost;
      best_ = order_;
      found_ = true;
    }
  }

  void place(const Candidate& candidate) {
    RankState& state = at(candidate.rank);
    const std::size_t kind = index(candidate.kind);
    const int mb = state.placed[kind];
    const StageCost& cost = stage(candidate.rank);
    const double duration = action_duration_s(cost, candidate.kind);
    saved_.push_back({state.end_s, state.first_start_s});
    if (state.first_start_s < 0) state.first_start_s = candidate.start_s;
    state.end_s = candidate.start_s + duration;
    state.remaining_s -= duration;
    if (candidate.kind == OpKind::kForward) {
      state.forward_end[static_cast<std::size_t>(mb)] = state.end_s;
      state.memory += cost.activation_bytes;
    } else if (candidate.kind == OpKind::kBackwardInput) {
      state.input_grad_end[static_cast<std::size_t>(mb)] = state.end_s;
      state.memory -= cost.activation_bytes - cost.weight_grad_bytes;
    } else {
      state.memory -= cost.weight_grad_bytes;
    }
    ++state.placed[kind];
    order_.actions[static_cast<std::size_t>(candidate.rank)].push_back({candidate.rank, mb, candidate.kind});
  }

  void unplace(const Candidate& candidate) {
    RankState& state = at(candidate.rank);
    const StageCost& cost = stage(candidate.rank);
    --state.placed[index(candidate.kind)];
    order_.actions[static_cast<std::size_t>(candidate.rank)].pop_back();
    if (candidate.kind == OpKind::kForward) {
      state.memory -= cost.activation_bytes;
    } else if (candidate.kind == OpKind::kBackwardInput) {
      state.memory += cost.activation_bytes - cost.weight_grad_bytes;
    } else {
      state.memory += cost.weight_grad_bytes;
    }
    state.remaining_s += action_duration_s(cost, candidate.kind);
    state.end_s = saved_.back().first;
    state.first_start_s = saved_.back().second;
    saved_.pop_back();
  }

  const ZeroBubbleSearchRequest& request_;
  int ranks_, m_;
  double best_s_;
  std::int64_t max_nodes_;
  std::int64_t nodes_ = 0;
  bool found_ = false;
  Schedule order_, best_;
  std::vector<RankState> ranks_state_;
  std::vector<std::pair<double, double>> saved_;  // each placed op's rank end and first start before it
  std::vector<std::pair<double, double>> releases_;  // the bound's unplaced ops: earliest start, duration
};

}  // namespace

ExactSearchResult search_exact_schedule(const ZeroBubbleSearchRequest& request, double upper_bound_s,
                                        std::int64_t max_nodes) {
  check_search_request(request);
  return BranchAndBound(request, upper_bound_s, max_nodes).run();
}

}  // namespace pipeplan::sim
