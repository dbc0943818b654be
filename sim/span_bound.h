// A lower bound on a schedule's cost (its longest rank span, the figure a
// replay reports) for any stage costs, without replaying them. A rank's
// span holds all its compute, and, for each micro-batch, its forward of the
// rank's lowest stage through every later stage's forward and input
// gradient to that stage's backward (and, when split, its weight
// gradient): a chain of dependencies, whichever ranks run it. Transfers,
// which only delay, are left out.
#pragma once

#include <array>
#include <vector>

#include "sim/costs.h"
#include "sim/schedule.h"

namespace pipeplan::sim {

class SpanBound {
 public:
  SpanBound() = default;  // bounds nothing: 0
  explicit SpanBound(const Schedule& schedule);
  // What every schedule of `ranks` ranks whose stages each run `passes`
  // forwards, input and weight gradients shares, for any_split_bound_s and
  // stage_work_s (lower_bound_s bounds nothing: 0): built without the
  // schedule, no higher than its own. `splits_weights`: W may run apart from
  // I, and the chain then leaves it out; `pairs`: passes may pair.
  static SpanBound outline(int ranks, int passes, bool splits_weights, bool pairs);
  double lower_bound_s(const PipelineCosts& costs) const;
  // A bound below lower_bound_s for every split of the work into stages,
  // from the forward, input-gradient and weight-gradient durations summed
  // over the stages (a full backward B costs I + W): the busiest rank does
  // at least the average rank's compute, and the rank holding stage 0 waits
  // for one micro-batch's forward and backward through every stage. 0
  // unless every stage runs as many forwards, and as many input and weight
  // gradients (in B or apart), as every other (as every generated schedule
  // does).
  double any_split_bound_s(double forward_sum_s, double input_sum_s, double weight_sum_s) const;
  // What one stage with these F, I and W durations computes over the step
  // (a full backward B costs I + W); 0 where any_split_bound_s is.
  double stage_work_s(double forward_s, double input_s, double weight_s) const;
  // The schedule pairs passes (DualPipeV's overlapped F&B), which may hide
  // their communication: lower_bound_s leaves it out, and callers of the
  // two above pass durations without it.
  bool pairs_passes() const { return pairs_; }

 private:
  // Compute actions per stage and kind (F, B, I, W) in one sum.
  using Counts = std::vector<std::array<int, kComputeKinds>>;
  std::vector<Counts> sums_;  // each rank's compute, then each rank's chain
  int ranks_ = 0;
  std::array<int, 3> per_stage_{};  // each stage's F, B + I and B + W passes, when equal
  bool uniform_ = false;
  bool splits_weights_ = false;  // W runs apart from I somewhere
  bool pairs_ = false;
};

}  // namespace pipeplan::sim
