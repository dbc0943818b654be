// `plan`'s framework configs for its best plan: --torchtitan-out (a
// torchtitan TOML fragment), --megatron-bridge-out (Megatron-Bridge
// recipe overrides) and --deepspeed-out (a DeepSpeed config).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "commands/output_files.h"
#include "planner/frameworks/framework_config.h"

namespace pipeplan::commands {

struct FrameworkFiles {
  std::optional<std::string> torchtitan, megatron_bridge, deepspeed;
};

void add_framework_file_options(CLI::App& command, FrameworkFiles& files);

// Adds each file asked for to `out`; throws InputError naming the option and
// what stands in the way where the framework cannot run the plan.
void add_framework_files(const FrameworkFiles& files, const planner::FrameworkConfig& torchtitan,
                         const planner::FrameworkConfig& megatron_bridge, const planner::FrameworkConfig& deepspeed,
                         OutputFiles& out);

// Throws InputError naming the option given, for a best plan no framework
// config describes (`why`).
void refuse_framework_files(const FrameworkFiles& files, std::string_view why);

}  // namespace pipeplan::commands
