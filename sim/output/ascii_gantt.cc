#include "sim/output/ascii_gantt.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace pipeplan::sim {
namespace {

constexpr int kIdle = -1;

double chart_end_s(const SimulationReport& report) {
  double end_s = report.makespan_s;
  for (const ComputeRecord& record : report.timeline->computes) end_s = std::max(end_s, record.end_s);
  return end_s > 0 ? end_s : 1e-3;
}

// Per column, the index into `computes` of the action running at the
// column's midpoint, or kIdle. `computes` is one rank's, in start order.
std::vector<int> column_owners(const std::vector<const ComputeRecord*>& computes, int width, double column_s) {
  std::vector<int> owners(static_cast<std::size_t>(width), kIdle);
  std::size_t next = 0;
  for (int column = 0; column < width; ++column) {
    const double mid_s = (column + 0.5) * column_s;
    while (next < computes.size() && computes[next]->end_s <= mid_s) ++next;
    if (next < computes.size() && computes[next]->start_s <= mid_s) {
      owners[static_cast<std::size_t>(column)] = static_cast<int>(next);
    }
  }
  return owners;
}

std::string render_row(const std::vector<const ComputeRecord*>& computes, const std::vector<int>& owners) {
  std::string row(owners.size(), '.');
  std::size_t column = 0;
  while (column < owners.size()) {
    const int owner = owners[column];
    std::size_t end = column + 1;
    while (end < owners.size() && owners[end] == owner) ++end;
    if (owner != kIdle) {
      const Action& action = computes[static_cast<std::size_t>(owner)]->action;
      const std::string letter = action.kind == OpKind::kRecompute ? "R" : std::string(kind_name(action.kind));
      const std::string label = letter + std::to_string(action.microbatch);
      std::fill(row.begin() + static_cast<std::ptrdiff_t>(column), row.begin() + static_cast<std::ptrdiff_t>(end),
                letter[0]);
      if (end - column >= label.size()) row.replace(column, label.size(), label);
    }
    column = end;
  }
  return row;
}

std::vector<std::vector<const ComputeRecord*>> computes_by_rank(const SimulationReport& report) {
  std::vector<std::vector<const ComputeRecord*>> by_rank(static_cast<std::size_t>(report.ranks));
  for (const ComputeRecord& record : report.timeline->computes) {
    by_rank[static_cast<std::size_t>(record.rank)].push_back(&record);
  }
  // The timeline is in start order already; sorting keeps this true for
  // hand-built reports too.
  for (auto& computes : by_rank) {
    std::stable_sort(computes.begin(), computes.end(),
                     [](const ComputeRecord* a, const ComputeRecord* b) { return a->start_s < b->start_s; });
  }
  return by_rank;
}

}  // namespace

std::string ascii_gantt(const SimulationReport& report, int width) {
  if (!report.timeline || report.ranks > kAsciiMaxRanks) return {};
  width = std::max(width, 1);
  const double column_s = chart_end_s(report) / width;
  const auto by_rank = computes_by_rank(report);
  const int digits = static_cast<int>(std::to_string(std::max(report.ranks - 1, 0)).size());
  std::string out;
  for (int rank = 0; rank < report.ranks; ++rank) {
    const auto& computes = by_rank[static_cast<std::size_t>(rank)];
    out += fmt::format("rank {:>{}} |{}|\n", rank, digits,
                       render_row(computes, column_owners(computes, width, column_s)));
  }
  out += fmt::format("F forward  B backward  I backward input  W backward weight{}  . idle\n",
                     report.recompute_actions > 0 ? "  R recompute" : "");
  out += fmt::format("1 column = {:.4g} ms\n", column_s * 1e3);
  return out;
}

}  // namespace pipeplan::sim
