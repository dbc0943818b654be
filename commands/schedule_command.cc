#include "commands/schedule_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "commands/option_use.h"
#include "commands/output_files.h"
#include "commands/schedule_source.h"
#include "common/error.h"
#include "sim/dependency_graph.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/pytorch_steps.h"
#include "sim/schedule_csv.h"
#include "sim/step_grid.h"
#include "sim/validation.h"

namespace pipeplan::commands {
namespace {

struct ScheduleOptions {
  ScheduleSource source;
  bool list = false;
  bool lowered = false;
  int max_steps = 64;
  std::string recv_placement = "pytorch";
  std::optional<std::string> csv_out;
};

void list_families() {
  for (const sim::ScheduleFamily& family : sim::schedule_families()) {
    std::string aliases;
    for (std::string_view alias : family.aliases) aliases += fmt::format("{}{}", aliases.empty() ? "" : ", ", alias);
    std::cout << fmt::format("{:<22} v={} {:<6} {}{}\n", family.name, family.default_virtual_stages,
                             family.splits_backward ? "B/W" : "fused", family.description,
                             aliases.empty() ? "" : fmt::format(" (also: {})", aliases));
  }
}

void run_schedule(const ScheduleOptions& options, const CLI::App& command) {
  const std::vector<std::string_view> outputs{"lowered", "max-steps", "recv-placement", "csv-out"};
  if (options.list) {
    refuse_unread_options(command, {"list"}, "with --list");
  } else if (options.source.csv_file) {
    refuse_unread_options(command, joined({{"schedule-csv", "stages", "microbatches"}, outputs}),
                          "with --schedule-csv (the file fixes the schedule)");
  } else {
    refuse_unread_options(command,
                          joined({{"schedule", "stages", "microbatches", "virtual", "microbatch-group-size"}, outputs}),
                          "here");
  }
  if (options.list) {
    list_families();
    return;
  }
  const sim::Schedule schedule = load_schedule(options.source);
  if (given(command, "recv-placement") && schedule.has_comm()) {
    throw InputError("--recv-placement: the file already places its SEND/RECV actions; drop it");
  }
  sim::validate_schedule(schedule);
  const sim::Schedule lowered =
      sim::lower_communication(schedule, sim::parse_recv_placement(options.recv_placement));
  const sim::Schedule& shown = options.lowered ? lowered : schedule;
  const sim::ActionIndex index(shown);
  const sim::DependencyGraph graph = sim::build_dependency_graph(shown, index, sim::CommSemantics::kBlocking);
  const sim::StepLayout layout = sim::unit_step_layout(shown, index, graph);
  std::cout << fmt::format("{}: {} ranks, {} stages ({} placement), {} micro-batches: valid, {} compute actions, {} "
                           "with communication; {} steps in PyTorch's unit-step count (every action one step, "
                           "SEND/RECV included)\n",
                           schedule.name, schedule.ranks, schedule.stages,
                           sim::placement_name(schedule.stage_to_rank, schedule.ranks), schedule.microbatches,
                           schedule.compute_action_count(), lowered.action_count(), sim::pytorch_step_count(lowered));
  std::cout << fmt::format("{} grid: each action one step, as soon as what it needs has run ({} steps)\n",
                           options.lowered ? "lowered" : "compute", layout.steps);
  std::cout << sim::render_step_grid(shown, index, layout, {}, options.max_steps);
  if (options.csv_out) write_text_file(*options.csv_out, sim::write_schedule_csv(shown), "--csv-out");
}

}  // namespace

void register_schedule_command(CLI::App& app) {
  auto options = std::make_shared<ScheduleOptions>();
  CLI::App* command = app.add_subcommand(
      "schedule",
      "Generate (or read from CSV) a schedule, validate it (every action once, order, no deadlock), print its "
      "rank-by-step grid and optionally write it as a PyTorch schedule CSV.");
  add_schedule_options(*command, options->source);
  command->add_flag("--list", options->list, "List the schedule families and exit");
  command->add_flag("--lowered", options->lowered, "Show and write the form with SEND/RECV actions");
  command->add_option("--recv-placement", options->recv_placement,
                      "Where the lowering puts each RECV: pytorch (posted early, as PyTorch's _add_send_recv) or "
                      "before-use (just before the compute that needs it)")
      ->capture_default_str();
  command->add_option("--max-steps", options->max_steps, "Steps of the grid to print (the last ones)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--csv-out", options->csv_out, "Write the schedule as a PyTorch schedule CSV");
  command->callback([options, command] { run_schedule(*options, *command); });
}

}  // namespace pipeplan::commands
