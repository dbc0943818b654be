#include "step/memory_profile.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace pipeplan::step {
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

// Points already offered to the set: a point seen before was kept or
// dominated then, and whatever dominated it is dominated or kept still.
// Steady states repeat a few points thousands of times (deep interleaving,
// many micro-batches), so this saves the scans of the kept set. The key is a
// hash kept up to date with each count's change (a random 64-bit weight per
// count), so a point costs O(1) to look up; a hit is confirmed in full.
class SeenPoints {
  // SplitMix64 (Steele, Lea and Flood 2014): well-mixed 64-bit words.
  static std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 public:
  explicit SeenPoints(std::size_t chunks) : weights_(2 * chunks) {
    std::uint64_t state = 0;
    for (std::uint64_t& weight : weights_) weight = splitmix64(state);
  }
  void add_full(std::size_t chunk, int delta) { hash_ += static_cast<std::uint64_t>(delta) * weights_[chunk]; }
  void add_partial(std::size_t chunk, int delta) {
    hash_ += static_cast<std::uint64_t>(delta) * weights_[weights_.size() / 2 + chunk];
  }
  bool first_time(const MemoryPoint& point) {
    const std::size_t chunks = point.full.size();
    auto [first, last] = seen_.equal_range(hash_);
    for (auto it = first; it != last; ++it) {
      const auto stored = arena_.begin() + static_cast<std::ptrdiff_t>(it->second);
      if (std::equal(point.full.begin(), point.full.end(), stored) &&
          std::equal(point.partial.begin(), point.partial.end(), stored + static_cast<std::ptrdiff_t>(chunks))) {
        return false;
      }
    }
    seen_.emplace(hash_, arena_.size());
    arena_.insert(arena_.end(), point.full.begin(), point.full.end());
    arena_.insert(arena_.end(), point.partial.begin(), point.partial.end());
    return true;
  }

 private:
  std::vector<std::uint64_t> weights_;
  std::uint64_t hash_ = 0;
  // Each seen point's counts, full then partial, in one array (a search
  // profiles hundreds of schedules: no allocation per point).
  std::vector<int> arena_;
  std::unordered_multimap<std::uint64_t, std::size_t> seen_;  // hash -> the point's offset in arena_
};

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
  SeenPoints seen(profile.stages.size());
  auto offer = [&] {
    if (seen.first_time(current)) keep_undominated(profile.points, current);
  };
  for (const sim::Action& action : schedule.actions[static_cast<std::size_t>(rank)]) {
    if (!sim::is_compute(action.kind)) continue;
    const std::size_t chunk = chunk_of[static_cast<std::size_t>(action.stage)];
    if (action.kind == sim::OpKind::kForward) {
      ++current.full[chunk];
      seen.add_full(chunk, 1);
      after_forward = true;
      continue;
    }
    if (after_forward) offer();
    after_forward = false;
    switch (action.kind) {
      case sim::OpKind::kBackward:
        --current.full[chunk];
        seen.add_full(chunk, -1);
        break;
      case sim::OpKind::kBackwardInput:
        --current.full[chunk];
        ++current.partial[chunk];
        seen.add_full(chunk, -1);
        seen.add_partial(chunk, 1);
        break;
      case sim::OpKind::kBackwardWeight:
        --current.partial[chunk];
        seen.add_partial(chunk, -1);
        break;
      default: break;
    }
  }
  if (after_forward) offer();
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

}  // namespace pipeplan::step
