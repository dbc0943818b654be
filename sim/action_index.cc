#include "sim/action_index.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace pipeplan::sim {

std::string describe_action(int rank, std::size_t step, const Action& action) {
  return fmt::format("rank {}, step {}: {} (stage {}, micro-batch {})", rank, step, to_string(action), action.stage,
                     action.microbatch);
}

ActionIndex::ActionIndex(const Schedule& schedule) : schedule_(&schedule), microbatches_(schedule.microbatches) {
  if (schedule.ranks < 1 || schedule.stages < 1 || schedule.microbatches < 1) {
    throw ScheduleError(fmt::format("the schedule has {} ranks, {} stages and {} micro-batches; each must be >= 1",
                                    schedule.ranks, schedule.stages, schedule.microbatches));
  }
  if (schedule.stage_to_rank.size() != static_cast<std::size_t>(schedule.stages) ||
      schedule.actions.size() != static_cast<std::size_t>(schedule.ranks)) {
    throw ScheduleError("the schedule's stage-to-rank mapping or action lists do not match its shape");
  }
  std::size_t total = 0;
  rank_offsets_.reserve(schedule.actions.size() + 1);
  for (const auto& rank_actions : schedule.actions) {
    rank_offsets_.push_back(static_cast<std::uint32_t>(total));
    total += rank_actions.size();
  }
  if (total >= kAbsent) throw ScheduleError("the schedule has too many actions (over 4 billion)");
  rank_offsets_.push_back(static_cast<std::uint32_t>(total));
  vertex_count_ = static_cast<std::uint32_t>(total);
  vertices_.assign(static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(microbatches_) * kKinds,
                   kAbsent);

  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
    for (std::size_t step = 0; step < actions.size(); ++step) {
      const Action& action = actions[step];
      if (action.stage < 0 || action.stage >= schedule.stages) {
        throw ScheduleError(fmt::format("{}: stage {} is outside 0..{}", describe_action(rank, step, action),
                                        action.stage, schedule.stages - 1));
      }
      if (action.microbatch < 0 || action.microbatch >= microbatches_) {
        throw ScheduleError(fmt::format("{}: micro-batch {} is outside 0..{}", describe_action(rank, step, action),
                                        action.microbatch, microbatches_ - 1));
      }
      if (schedule.rank_of(action.stage) != rank) {
        throw ScheduleError(fmt::format("{}: stage {} lives on rank {}, not rank {}",
                                        describe_action(rank, step, action), action.stage,
                                        schedule.rank_of(action.stage), rank));
      }
      std::uint32_t& entry = vertices_[slot(action.stage, action.microbatch, action.kind)];
      if (entry != kAbsent) {
        throw ScheduleError(fmt::format("{}: {} appears twice (first at {})", describe_action(rank, step, action),
                                        to_string(action), describe(entry)));
      }
      entry = vertex(rank, step);
    }
  }
}

int ActionIndex::rank_of_vertex(std::uint32_t vertex) const {
  const auto it = std::upper_bound(rank_offsets_.begin(), rank_offsets_.end(), vertex);
  return static_cast<int>(it - rank_offsets_.begin()) - 1;
}

const Action& ActionIndex::action_of_vertex(std::uint32_t vertex) const {
  const int rank = rank_of_vertex(vertex);
  return schedule_->actions[static_cast<std::size_t>(rank)][position_of_vertex(vertex)];
}

std::string ActionIndex::describe(std::uint32_t vertex) const {
  return describe_action(rank_of_vertex(vertex), position_of_vertex(vertex), action_of_vertex(vertex));
}

}  // namespace pipeplan::sim
