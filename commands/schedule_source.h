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
  CLI::Option* ranks_option = nullptr;
  CLI::Option* microbatches_option = nullptr;
};

// Adds --schedule, --schedule-csv, --stages, --microbatches, --virtual,
// --microbatch-group-size to `command`.
void add_schedule_options(CLI::App& command, ScheduleSource& source);

// Generates or reads the schedule. A CSV's shape must agree with --stages
// and --microbatches when those are given.
sim::Schedule load_schedule(const ScheduleSource& source);

}  // namespace pipeplan::commands
