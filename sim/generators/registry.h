// The catalogue of schedule generators. Names follow PyTorch's
// torch.distributed.pipelining (matched case-insensitively).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/schedule.h"

namespace pipeplan::sim {

// What a generator needs to know. 0 means "the schedule's default".
struct PipelineShape {
  int ranks = 0;                  // p: pipeline ranks
  int microbatches = 0;           // m
  int virtual_stages = 0;         // v: chunks (stages) per rank
  int microbatch_group_size = 0;  // Interleaved1F1B: micro-batches per chunk round (default p)
};

using GeneratorFn = Schedule (*)(const PipelineShape&);

struct ScheduleFamily {
  std::string_view name;                   // canonical spelling
  std::vector<std::string_view> aliases;   // other accepted spellings
  std::string_view description;            // one line, with the source
  int default_virtual_stages;
  bool splits_backward;                    // emits I and W instead of B
  GeneratorFn generate;                    // null for a searched family
};

// Whether the family's order is searched for the stage costs under a
// memory limit (sim/search) rather than generated from the shape alone:
// generate_schedule refuses it, and its users build it from costs.
inline bool is_searched(const ScheduleFamily& family) { return family.generate == nullptr; }

const std::vector<ScheduleFamily>& schedule_families();
// Throws InputError listing the valid names.
const ScheduleFamily& find_schedule_family(std::string_view name);
// Whether the family runs any number v >= 2 of looped chunks per rank
// (Interleaved1F1B, LoopedBFS, InterleavedZeroBubble).
bool runs_any_virtual_stages(const ScheduleFamily& family);
// Whether the family runs the whole batch as one micro-batch (naive, with
// microbatch_scale = m); every other family runs each of the m micro-batches
// once through every stage.
bool runs_whole_batch(const ScheduleFamily& family);
// Whether the family pairs its own forwards and backwards into overlapped
// units (DualPipeV's F&B), which may hide their communication.
bool pairs_own_passes(const ScheduleFamily& family);
// Whether PyTorch's torch.distributed.pipelining runs the schedule: its
// Schedule* classes, or (VHalf, VMin, ZBAuto) its _PipelineScheduleRuntime
// from the order's CSV; torchtitan runs both, FSDP included. ZBH1 and ZBH2
// are the Zero Bubble fork of Megatron-LM's, naive no framework's.
bool runs_in_pytorch_pipelining(const ScheduleFamily& family);
// "GPipe, 1F1B, ..." for help and error texts.
std::string schedule_names();

// Resolves defaults, checks the shape (p >= 1, m >= 1, v >= 1) and runs the
// family's generator, which checks its own preconditions. A searched family
// is refused: it needs costs (sim/search/searched_schedule.h).
Schedule generate_schedule(std::string_view name, PipelineShape shape);

}  // namespace pipeplan::sim
