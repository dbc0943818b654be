#include "sim/step_grid.h"

#include <boost/range/iterator_range.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pipeplan::sim {

StepLayout unit_step_layout(const Schedule& schedule, const ActionIndex& index, const DependencyGraph& graph) {
  DependencyGraph unit = graph;
  std::fill(unit.vertex_weight_s.begin(), unit.vertex_weight_s.end(), 1.0);
  for (auto edge : boost::make_iterator_range(boost::edges(unit.graph))) unit.graph[edge].weight_s = 0;
  const EarliestStarts starts = earliest_starts(unit);
  StepLayout layout;
  layout.step.resize(static_cast<std::size_t>(schedule.ranks));
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
    auto& steps = layout.step[static_cast<std::size_t>(rank)];
    steps.resize(actions.size());
    for (std::size_t position = 0; position < actions.size(); ++position) {
      const double start = starts.start_s[index.vertex(rank, position)];
      steps[position] = start < 0 ? -1 : static_cast<int>(start);
      layout.steps = std::max(layout.steps, steps[position] + 1);
    }
  }
  return layout;
}

std::string render_step_grid(const Schedule& schedule, const ActionIndex& index, const StepLayout& layout,
                             const std::vector<std::uint32_t>& marked, int max_steps) {
  // A marked action would run right after the last step its rank reached.
  std::vector<std::vector<std::pair<int, std::string>>> cells(static_cast<std::size_t>(schedule.ranks));
  int last_step = layout.steps - 1;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
    int reached = -1;
    for (std::size_t position = 0; position < actions.size(); ++position) {
      const int step = layout.step[static_cast<std::size_t>(rank)][position];
      if (step < 0) continue;
      cells[static_cast<std::size_t>(rank)].emplace_back(step, to_string(actions[position]));
      reached = std::max(reached, step);
    }
    for (std::uint32_t vertex : marked) {
      if (index.rank_of_vertex(vertex) != rank) continue;
      cells[static_cast<std::size_t>(rank)].emplace_back(reached + 1,
                                                         fmt::format("[{}]", to_string(index.action_of_vertex(vertex))));
      last_step = std::max(last_step, reached + 1);
    }
  }
  const int first_step = std::max(0, last_step - max_steps + 1);
  std::size_t width = 4;
  for (const auto& row : cells) {
    for (const auto& [step, text] : row) width = std::max(width, text.size());
  }
  std::string grid = fmt::format("{:>8}", "step");
  for (int step = first_step; step <= last_step; ++step) grid += fmt::format(" {:<{}}", step, width);
  grid += '\n';
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    std::vector<std::string> row(static_cast<std::size_t>(last_step - first_step + 1), ".");
    for (const auto& [step, text] : cells[static_cast<std::size_t>(rank)]) {
      if (step >= first_step && step <= last_step) row[static_cast<std::size_t>(step - first_step)] = text;
    }
    grid += fmt::format("{:>8}", fmt::format("rank {}", rank));
    for (const std::string& text : row) grid += fmt::format(" {:<{}}", text, width);
    grid += '\n';
  }
  if (first_step > 0) grid += fmt::format("(steps 0..{} not shown)\n", first_step - 1);
  return grid;
}

}  // namespace pipeplan::sim
