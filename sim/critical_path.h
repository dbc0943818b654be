// The critical path of a replay: the chain of actions, each waiting on the
// one before it (its rank's previous action, or the producer of its input),
// that ends last. Reported as runs of consecutive actions on one rank.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/action.h"

namespace pipeplan::sim {

// A run of consecutive critical-path compute actions on one rank.
struct CriticalSegment {
  int rank = 0;
  Action first;
  Action last;
  std::size_t actions = 0;
};

struct CriticalPath {
  double length_s = 0;                   // the path's end: its last action's end
  std::vector<CriticalSegment> segments;  // first to last
};

// Appends `action` of `rank` to a path built first to last.
void extend_path(std::vector<CriticalSegment>& segments, int rank, const Action& action);

}  // namespace pipeplan::sim
