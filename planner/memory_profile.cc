#include "planner/memory_profile.h"

#include <algorithm>

namespace pipeplan::planner {
namespace {

bool dominates(const MemoryPoint& a, const MemoryPoint& b) {
  for (std::size_t c = 0; c < a.full.size(); ++c) {
    if (a.full[c] < b.full[c] || a.partial[c] < b.partial[c]) return false;
  }
  return true;
}

// Copies the point only when it is kept: most forwards repeat a point,
// most often the one kept last.
void keep_undominated(std::vector<MemoryPoint>& points, const MemoryPoint& point) {
  if (!points.empty() && dominates(points.back(), point)) return;
  for (const MemoryPoint& existing : points) {
    if (dominates(existing, point)) return;
  }
  std::erase_if(points, [&](const MemoryPoint& existing) { return dominates(point, existing); });
  points.push_back(point);
}

RankMemoryProfile profile_of(const sim::Schedule& schedule, int rank) {
  RankMemoryProfile profile;
  std::vector<std::size_t> chunk_of(static_cast<std::size_t>(schedule.stages), 0);
  for (int stage = 0; stage < schedule.stages; ++stage) {
    if (schedule.rank_of(stage) != rank) continue;
    chunk_of[static_cast<std::size_t>(stage)] = profile.stages.size();
    profile.stages.push_back(stage);
  }
  MemoryPoint current{std::vector<int>(profile.stages.size(), 0), std::vector<int>(profile.stages.size(), 0)};
  // A run of forwards only adds: its last point dominates the others.
  bool after_forward = false;
  for (const sim::Action& action : schedule.actions[static_cast<std::size_t>(rank)]) {
    if (!sim::is_compute(action.kind)) continue;
    const std::size_t chunk = chunk_of[static_cast<std::size_t>(action.stage)];
    if (action.kind == sim::OpKind::kForward) {
      ++current.full[chunk];
      after_forward = true;
      continue;
    }
    if (after_forward) keep_undominated(profile.points, current);
    after_forward = false;
    switch (action.kind) {
      case sim::OpKind::kBackward: --current.full[chunk]; break;
      case sim::OpKind::kBackwardInput:
        --current.full[chunk];
        ++current.partial[chunk];
        break;
      case sim::OpKind::kBackwardWeight: --current.partial[chunk]; break;
      default: break;
    }
  }
  if (after_forward) keep_undominated(profile.points, current);
  return profile;
}

}  // namespace

std::vector<RankMemoryProfile> memory_profiles(const sim::Schedule& schedule) {
  std::vector<RankMemoryProfile> profiles;
  profiles.reserve(static_cast<std::size_t>(schedule.ranks));
  for (int rank = 0; rank < schedule.ranks; ++rank) profiles.push_back(profile_of(schedule, rank));
  return profiles;
}

double peak_activation_bytes(const RankMemoryProfile& profile, const std::vector<double>& full_bytes,
                             const std::vector<double>& partial_bytes) {
  double peak = 0;
  for (const MemoryPoint& point : profile.points) {
    double bytes = 0;
    for (std::size_t c = 0; c < point.full.size(); ++c) {
      bytes += point.full[c] * full_bytes[c] + point.partial[c] * partial_bytes[c];
    }
    peak = std::max(peak, bytes);
  }
  return peak;
}

}  // namespace pipeplan::planner
