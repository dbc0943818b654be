// Where each action of a schedule sits: for every (stage, micro-batch,
// kind) the vertex number (rank by rank, in execution order) of the action,
// if present. Building it checks ranges, placement and duplicates.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/schedule.h"

namespace pipeplan::sim {

class ActionIndex {
 public:
  static constexpr std::uint32_t kAbsent = std::numeric_limits<std::uint32_t>::max();

  // Throws ScheduleError for an action outside [0, stages) x [0, m), an
  // action on a rank that does not hold its stage, or a duplicate.
  explicit ActionIndex(const Schedule& schedule);

  std::uint32_t find(int stage, int microbatch, OpKind kind) const {
    return vertices_[slot(stage, microbatch, kind)];
  }
  std::uint32_t vertex_count() const { return vertex_count_; }
  std::uint32_t vertex(int rank, std::size_t position) const {
    return rank_offsets_[static_cast<std::size_t>(rank)] + static_cast<std::uint32_t>(position);
  }
  int rank_of_vertex(std::uint32_t vertex) const;
  std::size_t position_of_vertex(std::uint32_t vertex) const {
    return vertex - rank_offsets_[static_cast<std::size_t>(rank_of_vertex(vertex))];
  }
  const Action& action_of_vertex(std::uint32_t vertex) const;
  // "rank 1, step 4: 2B3 (stage 2, micro-batch 3)"
  std::string describe(std::uint32_t vertex) const;

 private:
  std::size_t slot(int stage, int microbatch, OpKind kind) const {
    return (static_cast<std::size_t>(stage) * static_cast<std::size_t>(microbatches_) +
            static_cast<std::size_t>(microbatch)) *
               kKinds +
           static_cast<std::size_t>(kind);
  }
  static constexpr std::size_t kKinds = 9;  // the compute kinds and SEND/RECV (not host copies)

  const Schedule* schedule_;
  int microbatches_;
  std::uint32_t vertex_count_ = 0;
  std::vector<std::uint32_t> rank_offsets_;
  std::vector<std::uint32_t> vertices_;
};

// "rank 1, step 4: 2B3 (stage 2, micro-batch 3)"
std::string describe_action(int rank, std::size_t step, const Action& action);

}  // namespace pipeplan::sim
