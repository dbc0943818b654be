#include "cli/simulate_command.h"

#include <fmt/format.h>

#include <memory>

#include "cli/compare_schedules.h"
#include "cli/cost_inputs.h"
#include "cli/model_simulate.h"
#include "cli/output_files.h"
#include "cli/schedule_source.h"
#include "common/error.h"
#include "sim/output/ascii_gantt.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/report_json.h"
#include "sim/output/report_text.h"
#include "sim/output/svg_gantt.h"
#include "sim/simulate.h"

namespace pipeplan::cli {
namespace {

// Small enough for a readable terminal Gantt.
constexpr int kGanttMaxRanks = 16;
constexpr std::size_t kGanttMaxActionsPerRank = 48;

struct SimulateOptions {
  ScheduleSource source;
  CostInputs costs;
  ModelSimulateOptions model;
  bool no_overlap = false;
  bool json = false;
  bool gantt = false;
  std::optional<std::string> trace_file;
  std::optional<std::string> svg_file;
};

bool wants_gantt(const SimulateOptions& options, const sim::Schedule& schedule) {
  if (options.json) return false;
  if (options.gantt) return true;
  return schedule.ranks <= kGanttMaxRanks &&
         schedule.compute_action_count() <= kGanttMaxActionsPerRank * static_cast<std::size_t>(schedule.ranks);
}

bool splits_backward(const sim::Schedule& schedule) {
  for (const auto& actions : schedule.actions) {
    for (const sim::Action& action : actions) {
      if (action.kind == sim::OpKind::kBackwardInput || action.kind == sim::OpKind::kBackwardWeight) return true;
    }
  }
  return false;
}

bool has_given_costs(const CostInputs& costs) {
  return costs.tf || costs.tb || costs.tw || costs.costs_file || costs.act_bytes || costs.wgrad_bytes ||
         costs.static_bytes || costs.p2p_bytes;
}

CommandOutput run_simulate(const SimulateOptions& options) {
  const ModelRunOutputs files{options.no_overlap, options.trace_file, options.svg_file};
  if (options.model.plan) {
    if (options.model.model || has_given_costs(options.costs) || options.source.csv_file) {
      throw InputError("--plan carries the model, costs and schedule: drop --model, --schedule-csv and the cost options");
    }
    return run_plan_simulate(*options.model.plan, files);
  }
  if (options.model.model) {
    if (has_given_costs(options.costs)) {
      throw InputError("--tf/--tb/--tw/--costs and the byte options cannot be combined with --model: its costs come "
                       "from the cost model");
    }
    return run_model_simulate(options.model, options.source, files);
  }
  if (options.model.hardware) throw InputError("--hardware needs --model (costs from the cost model)");
  if (options.model.profile) throw InputError("--profile needs --model: a profile measures a model's layers");
  const ResolvedCosts costs = resolve_costs(options.costs);
  if (options.source.csv_file == std::nullopt && options.source.name == "all") {
    return compare_schedules(options.source, costs, !options.no_overlap);
  }
  const sim::Schedule schedule = load_schedule(options.source);
  if (!costs.weight_grad_given && splits_backward(schedule)) {
    throw InputError(fmt::format("{} splits the backward into I and W: give --tw, the weight-gradient time (ms)",
                                 schedule.name));
  }
  const bool gantt = wants_gantt(options, schedule);
  sim::SimulationOptions simulation;
  simulation.overlap_comm = !options.no_overlap;
  simulation.record_timeline = gantt || options.trace_file || options.svg_file;
  const sim::SimulationReport report =
      sim::simulate(schedule, sim::expand_rank_costs(costs.rank_costs, schedule), costs.topology, simulation);

  CommandOutput output;
  output.json = sim::report_to_json(report);
  output.json["cost_source"] = costs.source;
  output.text = sim::report_to_text(report) + fmt::format("  costs: {}\n", costs.source);
  if (gantt) output.text += "\n" + sim::ascii_gantt(report);
  if (options.trace_file) write_text_file(*options.trace_file, sim::chrome_trace_json(report), "--trace");
  if (options.svg_file) write_text_file(*options.svg_file, sim::svg_gantt(report), "--svg");
  return output;
}

}  // namespace

void register_simulate_command(CLI::App& app, OutputSink sink) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* command = app.add_subcommand(
      "simulate",
      "Replay a pipeline schedule with per-op durations, link costs and memory; report iteration time, bubble and "
      "per-rank peak memory. --schedule all compares every schedule on the same costs.");
  add_schedule_options(*command, options->source);
  add_cost_options(*command, options->costs);
  add_model_simulate_options(*command, options->model);
  command->add_flag("--no-overlap", options->no_overlap,
                    "Communication blocks the compute stream (default: it overlaps)");
  command->add_flag("--json", options->json, "Print one JSON object instead of the summary");
  command->add_flag("--gantt", options->gantt, "Always print the terminal Gantt chart (default: small cases only)");
  command->add_option("--trace", options->trace_file,
                      "Write a Chrome trace (open in ui.perfetto.dev or chrome://tracing)");
  command->add_option("--svg", options->svg_file, "Write a Gantt chart as SVG");
  command->callback([options, sink] { sink(run_simulate(*options), options->json); });
}

}  // namespace pipeplan::cli
