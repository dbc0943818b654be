// The schedule a command works on: generated from a name and shape, or read
// from a PyTorch schedule CSV. Shared by `simulate` and `schedule`.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "sim/schedule.h"

namespace pipeplan::commands {

struct ScheduleSource {
  std::string name = "1F1B";
  std::optional<std::string> csv_file;
  int ranks = 8;
  int microbatches = 24;
  int virtual_stages = 0;
  int microbatch_group_size = 0;
  // A searched schedule's limit on each rank's activations, as given
  // (sim::parse_activation_limit).
  std::optional<std::string> activation_limit;
  CLI::Option* ranks_option = nullptr;
  CLI::Option* microbatches_option = nullptr;
};

// Adds --schedule, --schedule-csv, --stages, --microbatches, --virtual,
// --microbatch-group-size to `command`.
void add_schedule_options(CLI::App& command, ScheduleSource& source);
// Adds --activation-limit, for commands that search an order (simulate).
void add_activation_limit_option(CLI::App& command, ScheduleSource& source);

// Generates or reads the schedule. A CSV's shape must agree with --stages
// and --microbatches when those are given. A searched family is refused
// (it needs costs): see searches_schedule.
sim::Schedule load_schedule(const ScheduleSource& source);

// Whether the source names a searched family (ZBAuto), whose order comes
// from costs; refuses --activation-limit for any other schedule, and
// --virtual other than 1 for a searched one.
bool searches_schedule(const ScheduleSource& source);

}  // namespace pipeplan::commands
