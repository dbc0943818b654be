#include "commands/framework_files.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands/output_files.h"
#include "common/error.h"

namespace pipeplan::commands {
namespace {

void add_config(const std::optional<std::string>& path, std::string_view option, std::string_view framework,
                const planner::FrameworkConfig& config, OutputFiles& out) {
  if (!path) return;
  if (config.text.empty()) {
    throw InputError(
        fmt::format("{}: {} cannot run the best plan: {}", option, framework, fmt::join(config.refusals, "; ")));
  }
  out.add(*path, config.text, option);
}

}  // namespace

void add_framework_file_options(CLI::App& command, FrameworkFiles& files) {
  command.add_option("--torchtitan-out", files.torchtitan,
                     "Write the best plan's torchtitan job config (TOML fragment); refused where torchtitan cannot "
                     "run the plan");
  command.add_option("--megatron-bridge-out", files.megatron_bridge,
                     "Write the best plan's Megatron-Bridge recipe overrides (YAML); refused where Megatron-core "
                     "cannot run the plan");
  command.add_option("--deepspeed-out", files.deepspeed,
                     "Write the best plan's DeepSpeed config (JSON); refused where DeepSpeed cannot run the plan");
}

void add_framework_files(const FrameworkFiles& files, const planner::FrameworkConfig& torchtitan,
                         const planner::FrameworkConfig& megatron_bridge, const planner::FrameworkConfig& deepspeed,
                         OutputFiles& out) {
  add_config(files.torchtitan, "--torchtitan-out", "torchtitan", torchtitan, out);
  add_config(files.megatron_bridge, "--megatron-bridge-out", "Megatron-Bridge", megatron_bridge, out);
  add_config(files.deepspeed, "--deepspeed-out", "DeepSpeed", deepspeed, out);
}

void refuse_framework_files(const FrameworkFiles& files, std::string_view why) {
  if (files.torchtitan) throw InputError(fmt::format("--torchtitan-out: {}", why));
  if (files.megatron_bridge) throw InputError(fmt::format("--megatron-bridge-out: {}", why));
  if (files.deepspeed) throw InputError(fmt::format("--deepspeed-out: {}", why));
}

}  // namespace pipeplan::commands
