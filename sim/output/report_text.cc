#include "sim/output/report_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "sim/memory_fit.h"

namespace pipeplan::sim {
namespace {

std::string headline(const SimulationReport& report) {
  std::string text = fmt::format(
      "{}: {} x {} per rank ({} placement), {}, communication {}\n", report.schedule,
      format_plural(report.ranks, "rank"), format_plural(report.virtual_stages, "stage"), report.placement,
      report.microbatches == 1 ? "1 micro-batch" : fmt::format("{} micro-batches", report.microbatches),
      report.overlap_comm ? "overlapped with compute" : "blocking compute");
  text += fmt::format("  iteration time (cost)  {:>12}   largest rank span; makespan {}\n", format_duration(report.cost_s),
                      format_duration(report.makespan_s));
  text += fmt::format("  ideal (busiest rank)   {:>12}\n", format_duration(report.ideal_s));
  if (report.host_copies > 0) {
    text += "  critical path              none   host copies are not in its graph\n";
  } else {
    text += fmt::format("  critical path          {:>12}   uncontended links\n", format_duration(report.critical_path_s));
  }
  text += fmt::format("  bubble rate            {:>10.2f} %   1 - busy / (ranks x cost)\n", report.bubble_rate * 100);
  text += fmt::format("  bubble over ideal      {:>10.2f} %   (cost - ideal) / ideal\n",
                      report.bubble_over_ideal * 100);
  text += fmt::format("  actions                {:>12}   {} compute{}, {} transfers on {} links{}\n", report.actions,
                      report.compute_actions,
                      report.recompute_actions > 0
                          ? fmt::format(" ({} of them recomputations before their backwards)", report.recompute_actions)
                          : "",
                      report.transfers, report.links,
                      report.host_copies > 0
                          ? fmt::format(" ({} of them host copies, on 2 host links per rank)", report.host_copies)
                          : "");
  return text;
}

// With offload, a column of what each rank held in host memory at most.
std::string rank_table(const SimulationReport& report) {
  const bool offload = report.host_copies > 0;
  // One unit for the table: seconds once a span reaches 10 s.
  double longest = 0;
  for (const RankReport& rank : report.ranks_detail) longest = std::max(longest, rank.span_s);
  const bool seconds = longest >= 10;
  const double scale = seconds ? 1 : 1e3;
  const char* unit = seconds ? "s" : "ms";
  std::string text = fmt::format("  {:>5} {:>12} {:>12} {:>12} {:>9} {:>12} {:>12}{}\n", "rank",
                                 fmt::format("busy {}", unit), fmt::format("idle {}", unit),
                                 fmt::format("span {}", unit), "in-flight", "peak act", "peak memory",
                                 offload ? fmt::format(" {:>12}", "on host") : "");
  for (const RankReport& rank : report.ranks_detail) {
    text += fmt::format("  {:>5} {:>12.3f} {:>12.3f} {:>12.3f} {:>9.4g} {:>12} {:>12}{}\n", rank.rank,
                        rank.busy_s * scale, rank.idle_s * scale, rank.span_s * scale, rank.peak_inflight_microbatches,
                        format_bytes(rank.peak_activation_bytes), format_bytes(rank.peak_memory_bytes),
                        offload ? fmt::format(" {:>12}", format_bytes(rank.peak_host_bytes)) : "");
  }
  return text;
}

// The ranks the critical path walks through, when that is short enough to read.
std::string critical_path_line(const SimulationReport& report) {
  constexpr std::size_t kMaxSegments = 12;
  if (report.critical_path.empty()) return "";
  if (report.critical_path.size() > kMaxSegments) {
    return fmt::format("  critical path crosses ranks {} times\n", report.critical_path.size() - 1);
  }
  std::string text = "  critical path: ";
  for (std::size_t i = 0; i < report.critical_path.size(); ++i) {
    const CriticalSegment& segment = report.critical_path[i];
    text += fmt::format("{}rank {} {}..{} ({})", i == 0 ? "" : " -> ", segment.rank, to_string(segment.first),
                        to_string(segment.last), segment.actions);
  }
  return text + "\n";
}

}  // namespace

std::string memory_fit_line(const SimulationReport& report) {
  const std::string overflow = memory_overflow_text(report);
  if (!overflow.empty()) return fmt::format("  DOES NOT FIT in {}\n", overflow);
  if (report.memory_limit_bytes <= 0) return "";
  if (!report.rank_memory_limit_bytes.empty()) {
    return fmt::format("  memory                 fits: every rank within its own limit ({})\n",
                       report.memory_limit_source);
  }
  return fmt::format("  memory                 fits: every rank within {} ({})\n",
                     format_bytes(report.memory_limit_bytes), report.memory_limit_source);
}

std::string report_to_text(const SimulationReport& report) {
  return headline(report) + critical_path_line(report) + rank_table(report) + memory_fit_line(report);
}

}  // namespace pipeplan::sim
