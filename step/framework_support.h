// Which job layouts each training framework runs as planned, at the version
// named: its pipeline schedules and chunks per rank, its data-parallel
// sharding, recomputation, rank order and the rest. A plan search keeps to
// one framework's layouts (`plan --framework`) or tracks the best each runs;
// the framework writers (planner/frameworks/) say the layout in its words.
// Each rule names the framework source that sets it (framework_support.cc).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "models/job_layout.h"
#include "sim/generators/registry.h"
#include "step/stage_split.h"

namespace pipeplan::step {

// The frameworks a plan can be run by; kAny is no restriction.
enum class Framework : std::uint8_t { kMegatronLm, kMegatronBridge, kTorchtitan, kDeepSpeed, kPyTorch, kAny };
inline constexpr std::size_t kFrameworkCount = 5;  // the concrete ones, kAny not counted

struct FrameworkInfo {
  Framework id;
  std::string_view key;      // as --framework takes it: "megatron-lm"
  std::string_view name;     // as outputs print it: "Megatron-LM"
  std::string_view version;  // the release its rules were read from
};

// The concrete frameworks, in the order outputs list them.
const std::array<FrameworkInfo, kFrameworkCount>& frameworks();
const FrameworkInfo& framework_info(Framework framework);
// "megatron-lm", ..., or "any" (case-insensitive); throws InputError naming
// `option` and the names it takes.
Framework parse_framework(std::string_view text, std::string_view option = "--framework");
// "megatron-lm, megatron-bridge, torchtitan, deepspeed, pytorch or any".
std::string framework_keys();

// One bit per concrete framework: those that run a layout.
using FrameworkSet = std::uint8_t;
inline constexpr FrameworkSet framework_bit(Framework framework) {
  return static_cast<FrameworkSet>(1u << static_cast<unsigned>(framework));
}
inline constexpr FrameworkSet kEveryFramework = (1u << kFrameworkCount) - 1;

// Why `framework` cannot run `layout` as planned (one reason shared by every
// such layout, so that a search can count them), or null. A layout with
// per-stage recomputation has stage_recompute set; `seq_len` is the
// sequence each micro-batch holds. kAny runs everything.
const char* framework_refusal(Framework framework, const models::JobLayout& layout, int seq_len);
// The frameworks of a set, in frameworks()'s order.
std::vector<const FrameworkInfo*> frameworks_in(FrameworkSet set);

// The frameworks that run `layout` as planned; `schedule` is its schedule's
// family, when the caller has it at hand (a search asks for every candidate).
FrameworkSet frameworks_running(const models::JobLayout& layout, int seq_len);
FrameworkSet frameworks_running(const models::JobLayout& layout, const sim::ScheduleFamily& schedule, int seq_len);

// The split a framework makes itself over `stages` (one chunk per rank), or
// none where it expresses any split (Megatron's --pipeline-model-parallel-
// layout, torchtitan's and PyTorch's module lists). DeepSpeed's
// PipelineModule balances Megatron-DeepSpeed's blocks itself
// (partition_method='type:transformer'): the first L mod p stages take one
// block more, the embedding first, the output layer last.
std::optional<StageSplit> framework_split(Framework framework, int transformer_layers, int stages);
// The frameworks that make their own split (framework_split's).
inline constexpr FrameworkSet kSplitsItself = framework_bit(Framework::kDeepSpeed);
// Why `framework` cannot run a plan split as `split` (its own split
// differs), or null.
const char* split_refusal(Framework framework, const StageSplit& split);

// The data-parallel shardings `framework` runs on a layout of these degrees
// (with d x c > 1): Megatron's distributed optimizer is ZeRO-1, torchtitan's
// FSDP ZeRO-2 (or 3 without pipelining), DeepSpeed's pipeline engine takes
// ZeRO-1 at most, PyTorch all four.
std::vector<models::ZeroStage> zero_stages_run(Framework framework, const models::JobLayout& layout);

}  // namespace pipeplan::step
