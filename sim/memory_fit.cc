#include "sim/memory_fit.h"

#include <fmt/format.h>

#include "common/units.h"

namespace pipeplan::sim {

std::vector<RankOverMemory> ranks_over_memory(const SimulationReport& report) {
  std::vector<RankOverMemory> over;
  if (report.memory_limit_bytes <= 0) return over;
  for (const RankReport& rank : report.ranks_detail) {
    const std::int64_t limit = report.memory_limit_of(rank.rank);
    if (rank.peak_memory_bytes > limit) {
      over.push_back({rank.rank, rank.peak_memory_bytes, rank.peak_memory_bytes - limit});
    }
  }
  return over;
}

bool fits_memory(const SimulationReport& report) {
  return report.memory_limit_bytes > 0 && ranks_over_memory(report).empty();
}

std::string memory_overflow_text(const SimulationReport& report) {
  constexpr std::size_t kNamedRanks = 4;
  const std::vector<RankOverMemory> over = ranks_over_memory(report);
  if (over.empty()) return "";
  std::string text = report.rank_memory_limit_bytes.empty()
                         ? fmt::format("{} per rank ({}):", format_bytes(report.memory_limit_bytes),
                                       report.memory_limit_source)
                         : fmt::format("each rank's own limit ({}):", report.memory_limit_source);
  for (std::size_t i = 0; i < over.size() && i < kNamedRanks; ++i) {
    text += fmt::format("{} rank {} needs {} ({} over)", i == 0 ? "" : ",", over[i].rank,
                        format_bytes(over[i].peak_memory_bytes), format_bytes(over[i].over_by_bytes));
  }
  if (over.size() > kNamedRanks) text += fmt::format(" and {} more ranks", over.size() - kNamedRanks);
  return text;
}

}  // namespace pipeplan::sim
