// ZB-H2 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism", Sec. 2.2):
// stage s warms up with min(2(p - s) - 1, m) forwards, enough to fill the
// gap before its first input-gradient backward; then each step runs an I,
// the oldest pending W once more than 2s backwards have run, and a forward
// while any remain. The deferred Ws of the later stages fill the tail.
// Bubble (p-1)(T_F + T_B - 2T_W), zero when T_F = T_B = T_W. Running the I
// before the step's forward keeps stage s at 2(p - s) - 1 micro-batches of
// activations, the paper's (2p - 2i + 1) M_B for worker i = s + 1.
#include <algorithm>
#include <deque>

#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {

Schedule generate_zbh2(const PipelineShape& shape) {
  require_virtual_stages(shape, "ZBH2", 1);
  const int p = shape.ranks;
  const int m = shape.microbatches;
  Schedule schedule = make_schedule("ZBH2", shape, StagePlacement::kLoop);
  for (int stage = 0; stage < p; ++stage) {
    auto& actions = schedule.actions[static_cast<std::size_t>(stage)];
    const int warmup = std::min(2 * (p - stage) - 1, m);
    int forwards = 0;
    for (; forwards < warmup; ++forwards) actions.push_back({stage, forwards, OpKind::kForward});
    std::deque<int> pending_weights;
    for (int backward = 0; backward < m; ++backward) {
      actions.push_back({stage, backward, OpKind::kBackwardInput});
      pending_weights.push_back(backward);
      if (backward + 1 > 2 * stage) {
        actions.push_back({stage, pending_weights.front(), OpKind::kBackwardWeight});
        pending_weights.pop_front();
      }
      if (forwards < m) {
        actions.push_back({stage, forwards, OpKind::kForward});
        ++forwards;
      }
    }
    for (int mb : pending_weights) actions.push_back({stage, mb, OpKind::kBackwardWeight});
  }
  return schedule;
}

}  // namespace pipeplan::sim
