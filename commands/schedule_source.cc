#include "commands/schedule_source.h"

#include <fmt/format.h>

#include "commands/model_options.h"
#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/schedule_csv.h"
#include "sim/validation.h"

namespace pipeplan::commands {

void add_schedule_options(CLI::App& command, ScheduleSource& source) {
  command.add_option("--schedule", source.name, fmt::format("{}: {}", layout_help("schedule"), sim::schedule_names()))
      ->capture_default_str();
  command.add_option("--schedule-csv", source.csv_file,
                     "Read the schedule from a PyTorch schedule CSV (one row per rank) instead of generating it");
  source.ranks_option =
      command.add_option("--stages,-p,--pp", source.ranks, layout_help("pp"))
          ->capture_default_str();
  source.microbatches_option =
      command.add_option("--microbatches,-m", source.microbatches, layout_help("microbatches"))
          ->capture_default_str();
  command.add_option("--virtual,-v", source.virtual_stages,
                     fmt::format("{}; 0 = the schedule's default (2 for interleaved and V schedules, else 1)",
                                 layout_help("virtual")))
      ->capture_default_str();
  command.add_option("--microbatch-group-size", source.microbatch_group_size,
                     "Interleaved1F1B: micro-batches per chunk round (Megatron's "
                     "microbatch_group_size_per_vp_stage); 0 = p")
      ->capture_default_str();
}

void add_activation_limit_option(CLI::App& command, ScheduleSource& source) {
  command.add_option("--activation-limit", source.activation_limit,
                     "A searched schedule (ZBAuto): activations each rank may hold at once, as bytes (12GiB), "
                     "micro-batches (16: 16 x M_B) or a multiple of p (2p: Zero Bubble's ZB-2p) [default: what "
                     "--memory-cap, or with --model the GPU, leaves beside each rank's static memory; with given "
                     "times and no cap, p (what 1F1B holds)]");
}

bool searches_schedule(const ScheduleSource& source) {
  const bool all = !source.csv_file && source.name == "all";
  const bool searched = !source.csv_file && !all && sim::is_searched(sim::find_schedule_family(source.name));
  if (source.activation_limit && !searched && !all) {
    throw InputError("--activation-limit bounds a searched schedule's activations (--schedule ZBAuto): drop it");
  }
  if (searched && source.microbatch_group_size > 0) {
    throw InputError(fmt::format("--microbatch-group-size orders Interleaved1F1B's micro-batches; {} does not use it: "
                                 "drop it",
                                 sim::find_schedule_family(source.name).name));
  }
  if (searched && source.virtual_stages > 1) {
    throw InputError(fmt::format("--virtual {}: {} runs one stage per rank; drop --virtual", source.virtual_stages,
                                 sim::find_schedule_family(source.name).name));
  }
  return searched;
}

sim::Schedule load_schedule(const ScheduleSource& source) {
  if (!source.csv_file) {
    return sim::generate_schedule(source.name,
                                  {source.ranks, source.microbatches, source.virtual_stages, source.microbatch_group_size});
  }
  sim::Schedule schedule = sim::read_schedule_csv_file(*source.csv_file);
  // An order that cannot run is the file's error: name it.
  try {
    sim::validate_schedule(schedule);
  } catch (const ScheduleError& error) {
    throw ScheduleError(fmt::format("{}: {}", *source.csv_file, error.what()), error.detail());
  }
  if (source.ranks_option->count() > 0 && source.ranks != schedule.ranks) {
    throw InputError(fmt::format("--stages is {} but {} has {} rows (ranks); drop --stages or fix the file",
                                 source.ranks, *source.csv_file, schedule.ranks));
  }
  if (source.microbatches_option->count() > 0 && source.microbatches != schedule.microbatches) {
    throw InputError(fmt::format("--microbatches is {} but {} uses micro-batches 0..{}; drop --microbatches or fix "
                                 "the file",
                                 source.microbatches, *source.csv_file, schedule.microbatches - 1));
  }
  return schedule;
}

}  // namespace pipeplan::commands
