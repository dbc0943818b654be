#include "sim/critical_path.h"

namespace pipeplan::sim {

void extend_path(std::vector<CriticalSegment>& segments, int rank, const Action& action) {
  if (segments.empty() || segments.back().rank != rank) segments.push_back({rank, action, action, 0});
  segments.back().last = action;
  ++segments.back().actions;
}

}  // namespace pipeplan::sim
