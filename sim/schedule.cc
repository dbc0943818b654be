#include "sim/schedule.h"

#include <algorithm>

namespace pipeplan::sim {

std::size_t Schedule::action_count() const {
  std::size_t count = 0;
  for (const auto& rank_actions : actions) count += rank_actions.size();
  return count;
}

std::size_t Schedule::compute_action_count() const {
  std::size_t count = 0;
  for (const auto& rank_actions : actions) {
    count += static_cast<std::size_t>(std::count_if(rank_actions.begin(), rank_actions.end(),
                                                    [](const Action& a) { return is_compute(a.kind); }));
  }
  return count;
}

bool Schedule::has_comm() const {
  return std::any_of(actions.begin(), actions.end(), [](const std::vector<Action>& rank_actions) {
    return std::any_of(rank_actions.begin(), rank_actions.end(),
                       [](const Action& a) { return is_comm(a.kind); });
  });
}

std::vector<int> stage_to_rank_mapping(int ranks, int virtual_stages, StagePlacement placement) {
  std::vector<int> mapping(static_cast<std::size_t>(ranks * virtual_stages));
  for (int stage = 0; stage < ranks * virtual_stages; ++stage) {
    const int chunk = stage / ranks;
    const int offset = stage % ranks;
    const bool reversed = placement == StagePlacement::kV && chunk % 2 == 1;
    mapping[static_cast<std::size_t>(stage)] = reversed ? ranks - 1 - offset : offset;
  }
  return mapping;
}

std::string_view placement_name(const std::vector<int>& stage_to_rank, int ranks) {
  if (ranks <= 0 || stage_to_rank.size() % static_cast<std::size_t>(ranks) != 0) return "custom";
  const int virtual_stages = static_cast<int>(stage_to_rank.size()) / ranks;
  if (stage_to_rank == stage_to_rank_mapping(ranks, virtual_stages, StagePlacement::kLoop)) return "loop";
  if (stage_to_rank == stage_to_rank_mapping(ranks, virtual_stages, StagePlacement::kV)) return "v";
  return "custom";
}

}  // namespace pipeplan::sim
