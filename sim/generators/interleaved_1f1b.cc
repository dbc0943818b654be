// Interleaved 1F1B (Narayanan et al. 2021, Sec. 2.2.2; Megatron-LM's
// forward_backward_pipelining_with_interleaving): each rank holds v chunks
// placed in a loop (stage s on rank s % p). Forwards follow Megatron's
// schedule table: micro-batches in groups of g (default p), each group run
// through chunk 0, then chunk 1, ...; backwards walk the same table with the
// chunks reversed. Rank r warms up with 2(p - r - 1) + (v - 1) g chunk
// forwards (capped at m v). Bubble (1/v)(p - 1)/m of the ideal time.
#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {

namespace {

// Megatron takes the group size in [p, m]. Every group, the last (which
// takes what remains) included, needs at least p micro-batches or the
// order deadlocks; with the default g = p that is m % p == 0. With fewer
// micro-batches than ranks, all of them form one group, as PyTorch's
// ScheduleInterleaved1F1B runs them (one round of m micro-batches).
void check_groups(int p, int m, int group, bool default_group) {
  if (group == m && m < p) return;
  if (default_group && m % p != 0) {
    throw InputError(fmt::format(
        "Interleaved1F1B needs --microbatches divisible by --stages ({} % {} != 0): use m = {} or {}, "
        "or set --microbatch-group-size",
        m, p, std::max(p, m / p * p), (m / p + 1) * p));
  }
  if (group < p || group > m) {
    throw InputError(fmt::format("--microbatch-group-size {} must lie in [p, m] = [{}, {}], or equal m when m < p",
                                 group, p, m));
  }
  const int last = m % group == 0 ? group : m % group;
  if (last < p) {
    throw InputError(fmt::format("Interleaved1F1B: the last micro-batch group would hold m % g = {} < p = {} "
                                 "micro-batches and the order deadlocks; pick m and --microbatch-group-size with "
                                 "m % g == 0 or m % g >= p",
                                 last, p));
  }
}

}  // namespace

Schedule generate_interleaved_1f1b(const PipelineShape& shape) {
  const int p = shape.ranks;
  const int m = shape.microbatches;
  const int v = shape.virtual_stages;
  const bool default_group = shape.microbatch_group_size == 0;
  const int group = default_group ? std::min(p, m) : shape.microbatch_group_size;
  if (v > 1) check_groups(p, m, group, default_group);
  Schedule schedule = make_schedule("Interleaved1F1B", shape, StagePlacement::kLoop);
  for (int rank = 0; rank < p; ++rank) {
    auto [forwards, backwards] = interleaved_tables(rank, p, m, v, group);
    OneFOneBOrder order{std::move(forwards), std::move(backwards), 0, false, 0};
    order.warmup = std::min(2 * (p - rank - 1) + (v - 1) * group, m * v);
    schedule.actions[static_cast<std::size_t>(rank)] = expand_one_f_one_b(order);
  }
  return schedule;
}

}  // namespace pipeplan::sim
