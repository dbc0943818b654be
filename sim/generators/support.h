// Pieces shared by the generators.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/generators/registry.h"

namespace pipeplan::sim {

// An empty schedule of the right shape with its stage placement.
Schedule make_schedule(std::string name, const PipelineShape& shape, StagePlacement placement);

// Throws InputError unless v == expected, naming the schedule and the fix.
void require_virtual_stages(const PipelineShape& shape, std::string_view schedule, int expected);

// The 1F1B pattern shared by 1F1B, Interleaved1F1B, ZB-H1 and the
// interleaved zero-bubble schedule: `warmup` forwards, then (F, backward)
// pairs, then the remaining backwards. With `split_backward`, each backward
// is an I and the matching W (oldest first) follows it once `weight_delay`
// backwards have run; leftover Ws close the list.
struct OneFOneBOrder {
  std::vector<Action> forwards;   // in issue order
  std::vector<Action> backwards;  // in issue order, kind ignored
  int warmup = 0;
  bool split_backward = false;
  int weight_delay = 0;
};
std::vector<Action> expand_one_f_one_b(const OneFOneBOrder& order);

// Megatron's interleaved order for one rank: the (micro-batch, chunk) table
// of get_schedule_table with group size g, forwards by chunk, backwards by
// reversed chunk, on loop placement.
struct InterleavedTables {
  std::vector<Action> forwards;
  std::vector<Action> backwards;
};
InterleavedTables interleaved_tables(int rank, int ranks, int microbatches, int virtual_stages,
                                     int group_size);

}  // namespace pipeplan::sim
