// The exact min-max partition as a template, so the search's cost and
// fit functions inline (it runs for every candidate). See partitioner.h for
// the method: a dynamic programme over (stage, boundary) whose inner minimum
// is found by binary search, O(S n log n).
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "step/stage_split.h"

namespace pipeplan::step {

// cost(stage, i, j) grows with the run [i, j); fits(stage, i, j) stays true
// when the run shrinks. Every stage holds at least one layer; the last one
// holds the output layer (layer n - 1). With `block_on_every_stage`, layers
// 0 and n - 1 (the embedding and the output layer) never make a stage
// alone: every stage holds a transformer block, so no GPU idles on an
// embedding.
template <typename Cost, typename Fits>
std::optional<StageSplit> min_max_split(int layers, int stages, const Cost& cost, const Fits& fits,
                                        bool block_on_every_stage = true) {
  constexpr double kInfeasible = std::numeric_limits<double>::infinity();
  if (stages < 1 || stages > (block_on_every_stage ? layers - 2 : layers)) return std::nullopt;
  const bool edges = block_on_every_stage && stages > 1;
  const auto width = static_cast<std::size_t>(layers) + 1;
  std::vector<double> best(static_cast<std::size_t>(stages + 1) * width, kInfeasible);
  std::vector<int> choice(best.size(), -1);
  auto at = [&](int stage, int boundary) -> double& {
    return best[static_cast<std::size_t>(stage) * width + static_cast<std::size_t>(boundary)];
  };
  at(0, 0) = 0;
  for (int stage = 1; stage <= stages; ++stage) {
    const bool last = stage == stages;
    // The smallest start that fits (the earliest end of the stages before,
    // where best[] starts to be finite and grows); moves right as j grows.
    int lowest_fit = edges && stage >= 2 ? stage : stage - 1;
    // Leave a layer for each later stage, and the output layer for the last.
    const int last_end = last ? layers : std::min(layers - 1, layers - (stages - stage));
    const int first_end = last ? layers : (edges && stage == 1 ? 2 : stage);
    for (int j = first_end; j <= last_end; ++j) {
      while (lowest_fit < j && !fits(stage - 1, lowest_fit, j)) ++lowest_fit;
      // The last stage starts at a block, not at the output layer.
      const int latest_start = edges && last ? std::min(j - 1, layers - 2) : j - 1;
      if (lowest_fit > latest_start) continue;
      // max(best[stage - 1][i], cost(i, j)): the first grows with i, the
      // second shrinks, so the minimum sits where they cross.
      int left = lowest_fit, right = latest_start;
      while (left < right) {
        const int mid = left + (right - left) / 2;
        if (at(stage - 1, mid) >= cost(stage - 1, mid, j)) {
          right = mid;
        } else {
          left = mid + 1;
        }
      }
      for (int i : {left - 1, left}) {
        if (i < lowest_fit || i > latest_start) continue;
        const double value = std::max(at(stage - 1, i), cost(stage - 1, i, j));
        if (value < at(stage, j)) {
          at(stage, j) = value;
          choice[static_cast<std::size_t>(stage) * width + static_cast<std::size_t>(j)] = i;
        }
      }
    }
  }
  if (at(stages, layers) == kInfeasible) return std::nullopt;
  std::vector<int> boundaries(static_cast<std::size_t>(stages) + 1);
  boundaries.back() = layers;
  for (int stage = stages; stage > 0; --stage) {
    const auto end = static_cast<std::size_t>(boundaries[static_cast<std::size_t>(stage)]);
    boundaries[static_cast<std::size_t>(stage) - 1] = choice[static_cast<std::size_t>(stage) * width + end];
  }
  return StageSplit(std::move(boundaries));
}

// Whether any split satisfies `fits` (min_max_split's rules), in O(n): each
// stage in turn takes the longest run that fits, leaving a layer for each
// later stage (and the output layer's stage its block). Exact: as a run that
// fits still fits when it shrinks, no split's cuts lie beyond these.
template <typename Fits>
bool any_split_fits(int layers, int stages, const Fits& fits, bool block_on_every_stage = true) {
  if (stages < 1 || stages > (block_on_every_stage ? layers - 2 : layers)) return false;
  const bool edges = block_on_every_stage && stages > 1;
  int start = 0;
  for (int stage = 0; stage + 1 < stages; ++stage) {
    // Later stages need a layer each, the last two (a block and the output).
    const int latest_end = layers - (stages - 1 - stage) - (edges ? 1 : 0);
    int end = edges && stage == 0 ? 2 : start + 1;
    if (end > latest_end || !fits(stage, start, end)) return false;
    while (end < latest_end && fits(stage, start, end + 1)) ++end;
    start = end;
  }
  return fits(stages - 1, start, layers);
}

// Two exact passes: the smallest slowest-stage time T under the memory cap,
// then the smallest largest stage memory with every stage within
// T (1 + time_slack). time(stage, i, j) and memory(stage, i, j) may differ
// by stage (stages on different GPU kinds). See memory_aware_partition.
template <typename Time, typename Memory>
std::optional<StageSplit> memory_aware_split(int layers, int stages, const Time& time, const Memory& memory,
                                             double cap, double time_slack) {
  auto under_cap = [&](int stage, int i, int j) { return memory(stage, i, j) <= cap; };
  // Most candidates of a search that fit nowhere are told so in O(n).
  if (!any_split_fits(layers, stages, under_cap)) return std::nullopt;
  const std::optional<StageSplit> fastest =
      min_max_split(layers, stages, time, under_cap);
  if (!fastest) return std::nullopt;
  double slowest = 0;
  for (int stage = 0; stage < stages; ++stage) {
    slowest = std::max(slowest, time(stage, fastest->first_layer(stage), fastest->end_layer(stage)));
  }
  // At least a rounding slack: sums over different runs differ in the last bits.
  const double limit = slowest * (1 + std::max(time_slack, 1e-12));
  const std::optional<StageSplit> leanest = min_max_split(
      layers, stages, memory, [&](int stage, int i, int j) { return time(stage, i, j) <= limit && under_cap(stage, i, j); });
  return leanest ? leanest : fastest;
}

}  // namespace pipeplan::step
