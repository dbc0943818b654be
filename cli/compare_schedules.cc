#include "cli/compare_schedules.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/units.h"
#include "sim/generators/registry.h"
#include "sim/simulate.h"

namespace pipeplan::cli {
namespace {

struct Row {
  std::string schedule;
  std::optional<sim::SimulationReport> report;
  std::string skipped;  // why it did not run
};

Row run_one(const sim::ScheduleFamily& family, const ScheduleSource& source, const ResolvedCosts& costs,
            bool overlap_comm) {
  Row row{std::string(family.name), std::nullopt, ""};
  if (family.splits_backward && !costs.weight_grad_given) {
    row.skipped = "needs --tw";
    return row;
  }
  try {
    const int virtual_stages = family.default_virtual_stages == 1 ? 1 : source.virtual_stages;
    const sim::Schedule schedule = sim::generate_schedule(
        family.name, {source.ranks, source.microbatches, virtual_stages, source.microbatch_group_size});
    sim::SimulationOptions options;
    options.overlap_comm = overlap_comm;
    row.report = sim::simulate(schedule, sim::expand_rank_costs(costs.rank_costs, schedule), costs.topology, options);
  } catch (const InputError& error) {
    row.skipped = error.what();
  }
  return row;
}

std::int64_t peak_memory(const sim::SimulationReport& report) {
  std::int64_t peak = 0;
  for (const sim::RankReport& rank : report.ranks_detail) peak = std::max(peak, rank.peak_memory_bytes);
  return peak;
}

std::string table_text(const std::vector<Row>& rows, const ResolvedCosts& costs) {
  std::string out = fmt::format("{:<22} {:>3} {:>14} {:>10} {:>12} {:>14}\n", "schedule", "v", "iteration ms", "bubble %",
                     "peak in-flt", "peak memory");
  for (const Row& row : rows) {
    if (!row.report) {
      out += fmt::format("{:<22} skipped: {}\n", row.schedule, row.skipped);
      continue;
    }
    const sim::SimulationReport& r = *row.report;
    double inflight = 0;
    for (const sim::RankReport& rank : r.ranks_detail) inflight = std::max(inflight, rank.peak_inflight_microbatches);
    out += fmt::format("{:<22} {:>3} {:>14.3f} {:>10.2f} {:>12.4g} {:>14}\n", row.schedule, r.virtual_stages,
                       r.cost_s * 1e3, r.bubble_rate * 100, inflight, format_bytes(peak_memory(r)));
  }
  out += fmt::format("costs: {}\n", costs.source);
  return out;
}

nlohmann::ordered_json table_json(const std::vector<Row>& rows, const ResolvedCosts& costs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Row& row : rows) {
    nlohmann::ordered_json item = {{"schedule", row.schedule}};
    if (row.report) {
      item["virtual"] = row.report->virtual_stages;
      item["cost_ms"] = row.report->cost_s * 1e3;
      item["bubble_rate"] = row.report->bubble_rate;
      item["peak_memory_bytes"] = peak_memory(*row.report);
    } else {
      item["skipped"] = row.skipped;
    }
    list.push_back(std::move(item));
  }
  return {{"comparison", std::move(list)}, {"cost_source", costs.source}};
}

}  // namespace

CommandOutput compare_schedules(const ScheduleSource& source, const ResolvedCosts& costs, bool overlap_comm) {
  std::vector<Row> rows;
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    rows.push_back(run_one(family, source, costs, overlap_comm));
  }
  return {table_json(rows, costs), table_text(rows, costs)};
}

}  // namespace pipeplan::cli
