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

Schedule generate_interleaved_1f1b(const PipelineShape& shape) {
  const int p = shape.ranks;
  const int m = shape.microbatches;
  const int v = shape.virtual_stages;
  const bool default_group = shape.microbatch_group_size == 0;
  const int group = default_group ? p : shape.microbatch_group_size;
  if (v > 1 && default_group && m % p != 0) {
    throw InputError(fmt::format(
        "Interleaved1F1B needs --microbatches divisible by --stages ({} % {} != 0): use m = {} or {}, "
        "or set --microbatch-group-size",
        m, p, std::max(p, m / p * p), (m / p + 1) * p));
  }
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
