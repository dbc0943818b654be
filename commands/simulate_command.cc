#include "commands/simulate_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "commands/compare_schedules.h"
#include "commands/cost_inputs.h"
#include "commands/model_simulate.h"
#include "commands/option_use.h"
#include "commands/schedule_source.h"
#include "commands/simulate_outputs.h"
#include "common/error.h"
#include "sim/output/report_json.h"
#include "sim/output/report_text.h"
#include "sim/search/searched_schedule.h"
#include "sim/simulate.h"
#include "step/searched_order.h"

namespace pipeplan::commands {
namespace {

// Small enough for a readable terminal Gantt.
constexpr int kGanttMaxRanks = 16;
constexpr std::size_t kGanttMaxActionsPerRank = 48;

// The options each way of running `simulate` reads; any other given option
// is refused (option_use.h).
const std::vector<std::string_view> kScheduleShape{"schedule", "stages", "microbatches", "virtual",
                                                   "microbatch-group-size", "activation-limit"};
const std::vector<std::string_view> kGivenCosts{"tf", "tb", "tw", "tcomm", "costs", "act-bytes", "wgrad-bytes",
                                                "static-bytes", "p2p-bytes", "link-bandwidth", "ranks-per-node",
                                                "inter-node-bandwidth", "inter-node-latency", "host-bandwidth", "tr",
                                                "recompute-bytes"};
const std::vector<std::string_view> kOneRun{"memory-cap", "no-overlap", "recv-placement", "overlap-f-b", "json",
                                           "gantt", "trace", "svg", "window", "csv-out", "offload",
                                           "recompute-in-bubbles"};
const std::vector<std::string_view> kComparison{"memory-cap", "no-overlap", "recv-placement", "overlap-f-b", "json",
                                               "svg", "window"};

struct SimulateOptions {
  ScheduleSource source;
  CostInputs costs;
  ModelSimulateOptions model;
  SimulateOutputs outputs;
};

bool wants_gantt(const SimulateOutputs& outputs, const sim::Schedule& schedule) {
  if (outputs.json) return false;
  if (outputs.gantt) return true;
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

void set_memory_limit(sim::SimulationReport& report, const SimulateOutputs& outputs) {
  report.memory_limit_bytes = memory_cap_bytes(outputs);
  report.memory_limit_source = "--memory-cap";
}

// The schedule given times run: generated, read from a CSV, or (a searched
// family) searched for these costs.
struct SourcedSchedule {
  sim::Schedule schedule;
  bool searched = false;
  std::string note;  // what it was searched within
};

SourcedSchedule given_times_schedule(const ScheduleSource& source, const ResolvedCosts& costs,
                                     const SimulateOutputs& outputs) {
  if (!searches_schedule(source)) return {load_schedule(source), false, ""};
  const sim::ScheduleFamily& family = sim::find_schedule_family(source.name);
  if (!costs.weight_grad_given) {
    throw InputError(fmt::format("{} splits the backward into I and W: give --tw, the weight-gradient time (ms)",
                                 family.name));
  }
  const std::string name(family.name);
  step::check_no_bubble_recompute(name, outputs.recompute_in_bubbles);
  const sim::Schedule shape = sim::searched_schedule_shape(name, source.ranks, source.microbatches);
  std::optional<sim::ActivationLimit> limit;
  if (source.activation_limit) limit = sim::parse_activation_limit(*source.activation_limit, "--activation-limit");
  step::SearchedOrder order = step::search_order(name, sim::expand_rank_costs(costs.rank_costs, shape), costs.topology,
                                                 source.microbatches, limit, memory_cap_bytes(outputs), "--memory-cap");
  return {std::move(order.schedule), true, std::move(order.note)};
}

// Every schedule family on the given times.
CommandOutput compare_given_times(const ScheduleSource& source, const ResolvedCosts& costs,
                                  const SimulateOutputs& outputs) {
  const RunFamily run = [&](const sim::ScheduleFamily& family) {
    ComparedSchedule row{std::string(family.name), std::nullopt, 0, 0, "", costs.source};
    if (family.splits_backward && !costs.weight_grad_given) {
      row.skipped = "needs --tw";
      return row;
    }
    try {
      ScheduleSource one = source;
      one.name = family.name;
      one.virtual_stages = compared_virtual_stages(family, source.virtual_stages);
      one.microbatch_group_size = family.name == "Interleaved1F1B" ? source.microbatch_group_size : 0;
      if (!sim::is_searched(family)) one.activation_limit.reset();
      const sim::Schedule schedule = given_times_schedule(one, costs, outputs).schedule;
      row.report = sim::simulate(schedule, sim::expand_rank_costs(costs.rank_costs, schedule), costs.topology,
                                 simulation_options(outputs, false));
      set_memory_limit(*row.report, outputs);
      row.iteration_s = row.report->cost_s;
    } catch (const InputError& error) {
      row.skipped = error.what();
    }
    return row;
  };
  return compare_schedules(run, outputs, false);
}

CommandOutput simulate_given_times(const SimulateOptions& options) {
  const ResolvedCosts costs = resolve_costs(options.costs);
  const SimulateOutputs& outputs = options.outputs;
  if (costs.topology.has_host_link() && !outputs.offload) {
    throw InputError("--host-bandwidth prices the copies of --offload: add --offload or drop it");
  }
  if (costs.recompute_given && !outputs.recompute_in_bubbles) {
    throw InputError("--tr and --recompute-bytes describe the recomputation --recompute-in-bubbles runs apart: add "
                     "it or drop them");
  }
  const auto& kept = costs.rank_costs.activation_bytes;
  const bool keeps_none = std::all_of(kept.begin(), kept.end(), [](auto b) { return b <= 0; });
  if (outputs.offload && keeps_none) {
    throw InputError("--offload copies the activations each micro-batch keeps, and these costs keep none: give "
                     "--act-bytes (M_B per micro-batch per rank)");
  }
  if (outputs.offload && !costs.topology.has_host_link()) {
    throw InputError("--offload copies over each rank's host link: give --host-bandwidth (e.g. 50GB/s, PCIe 5.0 x16)");
  }
  if (options.source.activation_limit && keeps_none) {
    throw InputError("--activation-limit bounds the activations a searched order keeps, and these costs keep none: "
                     "give --act-bytes (M_B per micro-batch per rank; --wgrad-bytes for M_W, default 0) or drop it");
  }
  if (!options.source.csv_file && options.source.name == "all") {
    check_semantics_options(outputs, "all", true);
    return compare_given_times(options.source, costs, outputs);
  }
  const SourcedSchedule sourced = given_times_schedule(options.source, costs, outputs);
  const sim::Schedule& schedule = sourced.schedule;
  check_semantics_options(outputs, schedule.name, has_overlapped_pairs(schedule));
  if (costs.topology.ranks_per_node >= schedule.ranks) {
    throw InputError(fmt::format("--ranks-per-node {} puts all {} ranks on one node: it changes nothing; drop it",
                                 costs.topology.ranks_per_node, schedule.ranks));
  }
  if (outputs.recv_placement && schedule.has_comm()) {
    throw InputError("--recv-placement: the schedule already places its SEND/RECV actions; drop it");
  }
  if (!costs.weight_grad_given && (sourced.searched || splits_backward(schedule))) {
    throw InputError(fmt::format("{} splits the backward into I and W: give --tw, the weight-gradient time (ms)",
                                 schedule.name));
  }
  if (costs.weight_grad_bytes_given && !splits_backward(schedule)) {
    throw InputError(fmt::format("--wgrad-bytes is what an I keeps until its W, and {} runs full backwards: drop it "
                                 "or pick a schedule that splits the backward (ZBH1, ZBV, ...)",
                                 schedule.name));
  }
  const bool gantt = wants_gantt(outputs, schedule);
  const bool from_csv = options.source.csv_file.has_value();
  sim::SimulationReport report = sim::simulate(schedule, sim::expand_rank_costs(costs.rank_costs, schedule),
                                               costs.topology, simulation_options(outputs, gantt, from_csv));
  set_memory_limit(report, outputs);
  CommandOutput output;
  output.json = sim::report_to_json(report);
  output.json["cost_source"] = costs.source;
  output.text = sim::report_to_text(report) + fmt::format("  costs: {}\n", costs.source);
  if (sourced.searched) {
    output.json["schedule_search"] = sourced.note;
    output.text += fmt::format("  schedule: {}\n", sourced.note);
  }
  if (schedule.dropped_runtime_actions > 0) {
    const std::string note = fmt::format(
        "{} UNSHARD/RESHARD/REDUCE_GRAD cells of the CSV cost nothing here: FSDP sharding and per-stage gradient "
        "reduction are not modelled",
        schedule.dropped_runtime_actions);
    output.json["notes"] = {note};
    output.text += fmt::format("  note: {}\n", note);
  }
  write_simulation_files(report, schedule, outputs, gantt, output);
  return output;
}

CommandOutput run_simulate(const SimulateOptions& options, const CLI::App& command) {
  if (given(command, "window") && !options.outputs.svg_file) throw InputError("--window needs --svg");
  if (options.outputs.gantt && options.outputs.json) throw InputError("--gantt draws in the text summary: drop --json or it");
  const bool all = !options.source.csv_file && options.source.name == "all";
  if (options.model.plan) {
    refuse_unread_options(command, joined({{"plan", "explain"}, plan_override_options(), kOneRun}),
                          "with --plan (the plan carries the model and the costs)");
    if (all) throw InputError("--schedule all cannot be combined with --plan; use --model to compare schedules");
    return run_plan_simulate(options.model, options.source, options.outputs, command);
  }
  if (options.model.model) {
    if (options.source.csv_file) {
      throw InputError(
          "--schedule-csv replays a file's schedule with given times (--tf, --tb, ...); with --model the "
          "schedule is generated from --schedule: drop one of them");
    }
    refuse_unread_options(command, joined({model_mode_options(), all ? kComparison : joined({{"explain"}, kOneRun})}),
                          all ? "with --schedule all and --model" : "with --model (costs come from the cost model)");
    return all ? run_model_comparison(options.model, options.source, options.outputs)
               : run_model_simulate(options.model, options.source, options.outputs);
  }
  if (options.source.csv_file) {
    refuse_unread_options(command, joined({{"schedule-csv", "stages", "microbatches"}, kGivenCosts, kOneRun}),
                          "with --schedule-csv (the file fixes the schedule)");
  } else {
    refuse_unread_options(command, joined({kScheduleShape, kGivenCosts, all ? kComparison : kOneRun}),
                          all ? "with --schedule all" : "with given times (it needs --model or --plan)");
  }
  return simulate_given_times(options);
}

}  // namespace

void register_simulate_command(CLI::App& app, OutputSink sink) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* command = app.add_subcommand(
      "simulate",
      "Replay a pipeline schedule with per-op durations, link costs and memory; report iteration time, bubble and "
      "per-rank peak memory. --schedule all compares every schedule on the same costs.");
  add_schedule_options(*command, options->source);
  add_activation_limit_option(*command, options->source);
  add_cost_options(*command, options->costs);
  add_model_simulate_options(*command, options->model);
  add_simulate_output_options(*command, options->outputs);
  command->callback([options, sink, command] { sink(run_simulate(*options, *command), options->outputs.json); });
}

}  // namespace pipeplan::commands
