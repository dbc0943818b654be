// Looped breadth-first (Lamy-Poirier 2023, "Breadth-First Pipeline
// Parallelism"; PyTorch's ScheduleLoopedBFS): each rank holds v looped
// chunks and runs every micro-batch's forward on its first chunk, then its
// next chunk, ...; backwards visit the chunks in reverse, micro-batches in
// reverse order.
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {

Schedule generate_looped_bfs(const PipelineShape& shape) {
  const int p = shape.ranks;
  const int m = shape.microbatches;
  const int v = shape.virtual_stages;
  Schedule schedule = make_schedule("LoopedBFS", shape, StagePlacement::kLoop);
  for (int rank = 0; rank < p; ++rank) {
    auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
    for (int chunk = 0; chunk < v; ++chunk) {
      for (int mb = 0; mb < m; ++mb) actions.push_back({chunk * p + rank, mb, OpKind::kForward});
    }
    for (int chunk = v - 1; chunk >= 0; --chunk) {
      for (int mb = m - 1; mb >= 0; --mb) actions.push_back({chunk * p + rank, mb, OpKind::kBackward});
    }
  }
  return schedule;
}

}  // namespace pipeplan::sim
