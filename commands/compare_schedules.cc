#include "commands/compare_schedules.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands/output_files.h"
#include "common/error.h"
#include "common/units.h"
#include "sim/memory_fit.h"
#include "sim/output/report_json.h"
#include "sim/output/svg_gantt.h"

namespace pipeplan::commands {
namespace {

std::int64_t peak_memory(const sim::SimulationReport& report) {
  std::int64_t peak = 0;
  for (const sim::RankReport& rank : report.ranks_detail) peak = std::max(peak, rank.peak_memory_bytes);
  return peak;
}

double peak_inflight(const sim::SimulationReport& report) {
  double inflight = 0;
  for (const sim::RankReport& rank : report.ranks_detail) inflight = std::max(inflight, rank.peak_inflight_microbatches);
  return inflight;
}

// "fits", "over by 3.2 GiB (rank 0)" or "" without a limit.
std::string fit_cell(const sim::SimulationReport& report) {
  if (report.memory_limit_bytes <= 0) return "";
  const std::vector<sim::RankOverMemory> over = sim::ranks_over_memory(report);
  if (over.empty()) return "fits";
  const auto worst = std::max_element(over.begin(), over.end(), [](const auto& a, const auto& b) {
    return a.over_by_bytes < b.over_by_bytes;
  });
  return fmt::format("over by {} (rank {})", format_bytes(worst->over_by_bytes), worst->rank);
}

std::string table_text(const std::vector<ComparedSchedule>& rows, const std::string& cost_source, bool model) {
  std::string out = fmt::format("{:<22} {:>3} {:>14} {:>10} {:>12} {:>14}", "schedule", "v", "iteration ms",
                                "bubble %", "peak in-flt", "peak memory");
  out += model ? fmt::format(" {:>12}  {}\n", "tokens/s", "memory") : "\n";
  const sim::SimulationReport* with_limit = nullptr;
  for (const ComparedSchedule& row : rows) {
    if (!row.report) {
      out += fmt::format("{:<22} skipped: {}\n", row.schedule, row.skipped);
      continue;
    }
    const sim::SimulationReport& r = *row.report;
    if (r.memory_limit_bytes > 0) with_limit = &r;
    out += fmt::format("{:<22} {:>3} {:>14.3f} {:>10.2f} {:>12.4g} {:>14}", row.schedule, r.virtual_stages,
                       row.iteration_s * 1e3, r.bubble_rate * 100, peak_inflight(r), format_bytes(peak_memory(r)));
    out += model ? fmt::format(" {:>12.0f}  {}\n", row.tokens_per_s, fit_cell(r))
                 : (r.memory_limit_bytes > 0 ? "  " + fit_cell(r) + "\n" : "\n");
  }
  if (with_limit != nullptr) {
    out += fmt::format("memory limit: {} ({})\n", format_bytes(with_limit->memory_limit_bytes),
                       with_limit->memory_limit_source);
  }
  out += fmt::format("costs: {}\n", cost_source);
  return out;
}

nlohmann::ordered_json table_json(const std::vector<ComparedSchedule>& rows, const std::string& cost_source,
                                  bool model) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ComparedSchedule& row : rows) {
    nlohmann::ordered_json item = {{"schedule", row.schedule}};
    if (row.report) {
      item["virtual"] = row.report->virtual_stages;
      item["cost_ms"] = row.report->cost_s * 1e3;
      if (model) {
        item["iteration_time_s"] = row.iteration_s;
        item["tokens_per_s"] = row.tokens_per_s;
      }
      item["bubble_rate"] = row.report->bubble_rate;
      item["peak_inflight_microbatches"] = peak_inflight(*row.report);
      item["peak_memory_bytes"] = peak_memory(*row.report);
      sim::add_memory_fit(item, *row.report);
    } else {
      item["skipped"] = row.skipped;
    }
    list.push_back(std::move(item));
  }
  return {{"comparison", std::move(list)}, {"cost_source", cost_source}};
}

void write_chart(const std::vector<ComparedSchedule>& rows, const SimulateOutputs& outputs) {
  std::vector<sim::GanttPanel> panels;
  for (const ComparedSchedule& row : rows) {
    if (row.report) panels.push_back({&*row.report, ""});
  }
  if (panels.empty()) throw InputError("--svg: no schedule ran on this shape; see the reasons in the table");
  const sim::GanttWindow window = outputs.window ? sim::parse_gantt_window(*outputs.window) : sim::GanttWindow{};
  write_text_file(*outputs.svg_file, sim::svg_gantt_panels(panels, window), "--svg");
}

}  // namespace

int compared_virtual_stages(const sim::ScheduleFamily& family, int virtual_stages) {
  return family.default_virtual_stages == 1 ? 1 : virtual_stages;
}

CommandOutput compare_schedules(const RunFamily& run, const SimulateOutputs& outputs, bool model,
                                const std::string& heading) {
  std::vector<ComparedSchedule> rows;
  std::string cost_source;
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    rows.push_back(run(family));
    if (cost_source.empty()) cost_source = rows.back().cost_source;
  }
  if (cost_source.empty()) cost_source = "none (no schedule ran)";
  if (outputs.svg_file) write_chart(rows, outputs);
  return {table_json(rows, cost_source, model), heading + table_text(rows, cost_source, model)};
}

}  // namespace pipeplan::commands
