// Interleaved zero bubble (ZB1P over v looped chunks; Qi et al., ICLR 2024,
// as in PyTorch's ScheduleInterleavedZeroBubble): the interleaved 1F1B table
// with one warm-up forward per hop instead of two, backwards split into I
// and W, and rank r appending the oldest pending W after each pair from its
// r-th backward on. Groups are PyTorch's rounds: max(1, m / p) rounds of
// m / rounds micro-batches each. With v = 1 this is ZB-H1.
#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {

Schedule generate_interleaved_zero_bubble(const PipelineShape& shape) {
  const int p = shape.ranks;
  const int m = shape.microbatches;
  const int v = shape.virtual_stages;
  const int rounds = std::max(1, m / p);
  if (m % rounds != 0) {
    throw InputError(fmt::format(
        "InterleavedZeroBubble needs --microbatches divisible by its number of rounds max(1, m / p) = {}: "
        "use m = {} or {}",
        rounds, m / rounds * rounds, (m / rounds + 1) * rounds));
  }
  const int group = m / rounds;
  Schedule schedule = make_schedule("InterleavedZeroBubble", shape, StagePlacement::kLoop);
  for (int rank = 0; rank < p; ++rank) {
    auto [forwards, backwards] = interleaved_tables(rank, p, m, v, group);
    OneFOneBOrder order{std::move(forwards), std::move(backwards), 0, true, rank};
    order.warmup = std::min((p - rank - 1) + (v - 1) * group, m * v);
    schedule.actions[static_cast<std::size_t>(rank)] = expand_one_f_one_b(order);
  }
  return schedule;
}

}  // namespace pipeplan::sim
