// The floor for `pipeplan simulate`: a bare earliest-start recurrence over
// the same schedule (generated the same way), every rank's actions in
// order, each starting when its rank is free and its input has arrived
// (links never queue), and nothing else: no validation, no lowering, no
// observers, no report. `pipeplan simulate` run on the same arguments is
// compared with it as a whole process (bench/README.md).
//
//   yardstick SCHEDULE P M TF TB TW TCOMM    (times in ms)
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/generators/registry.h"

namespace {

using pipeplan::sim::Action;
using pipeplan::sim::OpKind;

double duration(OpKind kind, double tf, double tb, double tw) {
  switch (kind) {
    case OpKind::kForward: return tf;
    case OpKind::kBackward: return tb + tw;
    case OpKind::kBackwardInput: return tb;
    case OpKind::kBackwardWeight: return tw;
    default: return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    fmt::print(stderr, "usage: yardstick SCHEDULE P M TF TB TW TCOMM (ms)\n");
    return 2;
  }
  const int p = std::atoi(argv[2]), m = std::atoi(argv[3]);
  const double tf = std::atof(argv[4]), tb = std::atof(argv[5]), tw = std::atof(argv[6]), comm = std::atof(argv[7]);
  const pipeplan::sim::Schedule schedule = pipeplan::sim::generate_schedule(argv[1], {p, m, 0, 0});
  const int stages = schedule.stages;
  // Arrival of each stage's input per micro-batch: [stage][mb][forward, backward].
  std::vector<double> arrival(static_cast<std::size_t>(stages) * static_cast<std::size_t>(m) * 2, -1);
  auto slot = [&](int stage, int mb, int direction) {
    return (static_cast<std::size_t>(stage) * static_cast<std::size_t>(m) + static_cast<std::size_t>(mb)) * 2 +
           static_cast<std::size_t>(direction);
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(schedule.ranks), 0);
  std::vector<double> free_at(static_cast<std::size_t>(schedule.ranks), 0);
  double makespan = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int rank = 0; rank < schedule.ranks; ++rank) {
      const auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
      auto& at = next[static_cast<std::size_t>(rank)];
      for (; at < actions.size(); ++at) {
        const Action& a = actions[at];
        double start = free_at[static_cast<std::size_t>(rank)];
        const bool forward = a.kind == OpKind::kForward;
        const bool grad = a.kind == OpKind::kBackward || a.kind == OpKind::kBackwardInput;
        if ((forward && a.stage > 0) || (grad && a.stage + 1 < stages)) {
          const double ready = arrival[slot(a.stage, a.microbatch, forward ? 0 : 1)];
          if (ready < 0) break;
          start = std::max(start, ready);
        }
        const double end = start + duration(a.kind, tf, tb, tw);
        free_at[static_cast<std::size_t>(rank)] = end;
        makespan = std::max(makespan, end);
        if (forward && a.stage + 1 < stages) arrival[slot(a.stage + 1, a.microbatch, 0)] = end + comm;
        if (grad && a.stage > 0) arrival[slot(a.stage - 1, a.microbatch, 1)] = end + comm;
        progress = true;
      }
    }
  }
  fmt::print("makespan {:.3f} ms\n", makespan);
  return 0;
}
