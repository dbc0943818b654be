#include "sim/span_bound.h"

#include <algorithm>

namespace pipeplan::sim {
namespace {


std::size_t index(OpKind kind) { return static_cast<std::size_t>(kind); }

}  // namespace

SpanBound::SpanBound(const Schedule& schedule) {
  const auto stages = static_cast<std::size_t>(schedule.stages);
  std::vector<int> lowest_stage(static_cast<std::size_t>(schedule.ranks), schedule.stages);
  bool split = false;
  for (std::size_t rank = 0; rank < schedule.actions.size(); ++rank) {
    Counts& counts = sums_.emplace_back(stages, std::array<int, kComputeKinds>{});
    for (const Action& action : schedule.actions[rank]) {
      if (!is_compute(action.kind)) continue;
      ++counts[static_cast<std::size_t>(action.stage)][index(action.kind)];
      split = split || action.kind == OpKind::kBackwardWeight;
      pairs_ = pairs_ || action.overlapped;
      lowest_stage[rank] = std::min(lowest_stage[rank], action.stage);
    }
  }
  ranks_ = schedule.ranks;
  splits_weights_ = split;
  std::vector<std::array<int, 3>> per_stage(stages, std::array<int, 3>{});
  for (const Counts& counts : sums_) {
    for (std::size_t stage = 0; stage < stages; ++stage) {
      const std::array<int, kComputeKinds>& n = counts[stage];
      const int full = n[index(OpKind::kBackward)];
      per_stage[stage][0] += n[index(OpKind::kForward)];
      per_stage[stage][1] += full + n[index(OpKind::kBackwardInput)];
      per_stage[stage][2] += full + n[index(OpKind::kBackwardWeight)];
    }
  }
  uniform_ = !per_stage.empty() && std::all_of(per_stage.begin(), per_stage.end(),
                                               [&](const std::array<int, 3>& counts) { return counts == per_stage[0]; });
  if (uniform_) per_stage_ = per_stage[0];
  for (const int first : lowest_stage) {
    if (first >= schedule.stages) continue;  // a rank with nothing to do
    Counts& chain = sums_.emplace_back(stages, std::array<int, kComputeKinds>{});
    for (auto stage = static_cast<std::size_t>(first); stage < stages; ++stage) {
      chain[stage][index(OpKind::kForward)] = 1;
      chain[stage][index(split ? OpKind::kBackwardInput : OpKind::kBackward)] = 1;
    }
    if (split) chain[static_cast<std::size_t>(first)][index(OpKind::kBackwardWeight)] = 1;
  }
}

SpanBound SpanBound::outline(int ranks, int passes, bool splits_weights, bool pairs) {
  SpanBound bound;
  bound.ranks_ = ranks;
  bound.per_stage_ = {passes, passes, passes};
  bound.uniform_ = ranks > 0 && passes > 0;
  bound.splits_weights_ = splits_weights;
  bound.pairs_ = pairs;
  return bound;
}

double SpanBound::lower_bound_s(const PipelineCosts& costs) const {
  double bound = 0;
  for (const Counts& counts : sums_) {
    double length = 0;
    for (std::size_t stage = 0; stage < counts.size(); ++stage) {
      for (int kind = 0; kind < kComputeKinds; ++kind) {
        const int n = counts[stage][static_cast<std::size_t>(kind)];
        if (n == 0) continue;
        const StageCost& cost = costs.stages[stage];
        const auto op = static_cast<OpKind>(kind);
        // A pair hides no more than each pass's own communication.
        length += n * (action_duration_s(cost, op) - (pairs_ ? action_comm_s(cost, op) : 0.0));
      }
    }
    bound = std::max(bound, length);
  }
  return bound;
}

double SpanBound::stage_work_s(double forward_s, double input_s, double weight_s) const {
  if (!uniform_ || ranks_ < 1) return 0;
  return per_stage_[0] * forward_s + per_stage_[1] * input_s + per_stage_[2] * weight_s;
}

double SpanBound::any_split_bound_s(double forward_sum_s, double input_sum_s, double weight_sum_s) const {
  if (!uniform_ || ranks_ < 1) return 0;
  const double average = stage_work_s(forward_sum_s, input_sum_s, weight_sum_s) / ranks_;
  // The first rank's chain (see the constructor): F and I (or B) of every
  // stage; a split-off W only on its own first stage, left out.
  const double chain = forward_sum_s + input_sum_s + (splits_weights_ ? 0 : weight_sum_s);
  return std::max(average, chain);
}

}  // namespace pipeplan::sim
