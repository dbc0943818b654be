#include "sim/output/report_json.h"

#include "sim/memory_fit.h"

namespace pipeplan::sim {
namespace {

constexpr double kMsPerSecond = 1e3;

nlohmann::ordered_json rank_to_json(const RankReport& rank) {
  return {
      {"rank", rank.rank},
      {"busy_ms", rank.busy_s * kMsPerSecond},
      {"idle_ms", rank.idle_s * kMsPerSecond},
      {"span_ms", rank.span_s * kMsPerSecond},
      {"first_start_ms", rank.first_start_s * kMsPerSecond},
      {"last_end_ms", rank.last_end_s * kMsPerSecond},
      {"compute_actions", rank.compute_actions},
      {"peak_inflight_microbatches", rank.peak_inflight_microbatches},
      {"peak_inflight_chunks", rank.peak_inflight_chunks},
      {"peak_activation_bytes", rank.peak_activation_bytes},
      {"static_bytes", rank.static_bytes},
      {"peak_memory_bytes", rank.peak_memory_bytes},
      {"peak_host_bytes", rank.peak_host_bytes},
  };
}

}  // namespace

void add_memory_fit(nlohmann::ordered_json& json, const SimulationReport& report) {
  if (report.memory_limit_bytes <= 0) return;
  json["memory_limit_bytes"] = report.memory_limit_bytes;
  json["memory_limit_source"] = report.memory_limit_source;
  if (!report.rank_memory_limit_bytes.empty()) json["rank_memory_limit_bytes"] = report.rank_memory_limit_bytes;
  json["fits"] = fits_memory(report);
  nlohmann::ordered_json over = nlohmann::ordered_json::array();
  for (const RankOverMemory& rank : ranks_over_memory(report)) {
    over.push_back({{"rank", rank.rank},
                    {"peak_memory_bytes", rank.peak_memory_bytes},
                    {"over_by_bytes", rank.over_by_bytes}});
  }
  json["over_memory_ranks"] = std::move(over);
}

nlohmann::ordered_json report_to_json(const SimulationReport& report) {
  nlohmann::ordered_json json = {
      {"schedule", report.schedule},
      {"stages", report.stages},
      {"ranks", report.ranks},
      {"microbatches", report.microbatches},
      {"virtual", report.virtual_stages},
      {"placement", report.placement},
      {"overlap_comm", report.overlap_comm},
      {"makespan_ms", report.makespan_s * kMsPerSecond},
      {"cost_ms", report.cost_s * kMsPerSecond},
      {"ideal_ms", report.ideal_s * kMsPerSecond},
      {"bubble_rate", report.bubble_rate},
      {"bubble_over_ideal", report.bubble_over_ideal},
      // None with offload: the copies are not in the dependency graph.
      {"critical_path_ms", report.host_copies > 0 ? nlohmann::ordered_json()
                                                  : nlohmann::ordered_json(report.critical_path_s * kMsPerSecond)},
      {"compute_actions", report.compute_actions},
      {"actions", report.actions},
      {"transfers", report.transfers},
      {"links", report.links},
      {"host_copies", report.host_copies},
      {"recompute_actions", report.recompute_actions},
  };
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const RankReport& rank : report.ranks_detail) ranks.push_back(rank_to_json(rank));
  json["ranks_detail"] = std::move(ranks);
  nlohmann::ordered_json path = nlohmann::ordered_json::array();
  for (const CriticalSegment& segment : report.critical_path) {
    path.push_back({{"rank", segment.rank},
                    {"first", to_string(segment.first)},
                    {"last", to_string(segment.last)},
                    {"actions", segment.actions}});
  }
  json["critical_path"] = std::move(path);
  add_memory_fit(json, report);
  return json;
}

}  // namespace pipeplan::sim
