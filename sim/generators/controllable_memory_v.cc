// V-Min and V-Half (Qi, Wan, Huang, Lin et al. 2024, "Pipeline Parallelism
// with Controllable Memory", arXiv 2405.15362): two chunks per rank in a V
// (rank r holds stages r and 2p - 1 - r), backwards split into I and W, built
// from one repeating block per micro-batch. On rank r each micro-batch takes
// six unit slots, its four passes at fixed offsets and its two Ws in the
// free slots after them; micro-batch k runs the block shifted by 6k. The
// offsets set each activation's lifespan and so the memory: V-Min holds
// about a third of 1F1B's activations, V-Half about half. Around the steady
// state the block leaves gaps: passes of the warm-up and cool-down move into
// earlier free slots where their inputs are there and the rank's peak does
// not rise (the paper's greedy reordering), and every pass then starts as
// early as it can (the paper's squeeze) before the Ws take the free slots.
#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>

#include "common/error.h"
#include "sim/generators/generators.h"
#include "sim/generators/support.h"

namespace pipeplan::sim {
namespace {

// The passes of one rank, in slot units: chunk 0's forward, chunk 1's
// forward, chunk 1's I, chunk 0's I; then the Ws.
enum Pass { kForward0, kForward1, kInput1, kInput0, kWeight, kWeight0 = kWeight + 1 };
constexpr int kPasses = 4;

using Offsets = std::array<int, kPasses>;

// Slots of each pass kind (and, once placed, each W kind) per micro-batch.
using RankSlots = std::vector<std::vector<int>>;

Offsets v_min_offsets(int rank, int ranks) {
  const int gap = ranks % 3 == 0 ? 2 : 0;  // keeps the four offsets apart modulo 6
  return {rank, 2 * ranks - 1 - rank, 2 * ranks + gap + rank, 4 * ranks + gap - 1 - rank};
}

Offsets v_half_offsets(int rank, int ranks) {
  const int gap = ranks % 2 == 0 ? 3 : 0;
  return {2 * rank, 3 * ranks - 2 - rank, 3 * ranks + gap - 1 + 2 * rank, 6 * ranks + gap - 2 - rank};
}

int last_slot(const RankSlots& slots) {
  int last = 0;
  for (const auto& kind : slots) {
    if (!kind.empty()) last = std::max(last, kind.back());
  }
  return last;
}

// Each pass in slot order: (slot, kind, micro-batch). A rank runs one pass
// per slot, so the slots index them directly.
std::vector<std::tuple<int, int, int>> in_slot_order(const RankSlots& slots) {
  std::vector<std::pair<int, int>> at(static_cast<std::size_t>(last_slot(slots) + 1), {-1, 0});
  std::size_t passes = 0;
  for (int kind = 0; kind < static_cast<int>(slots.size()); ++kind) {
    const auto& kind_slots = slots[static_cast<std::size_t>(kind)];
    for (int mb = 0; mb < static_cast<int>(kind_slots.size()); ++mb) {
      at[static_cast<std::size_t>(kind_slots[static_cast<std::size_t>(mb)])] = {kind, mb};
      ++passes;
    }
  }
  std::vector<std::tuple<int, int, int>> order;
  order.reserve(passes);
  for (std::size_t slot = 0; slot < at.size(); ++slot) {
    if (at[slot].first >= 0) order.emplace_back(static_cast<int>(slot), at[slot].first, at[slot].second);
  }
  return order;
}

// Puts a W for each I in the first free slot after it (chunk 1's first
// where both wait), as one kind, or with `split` one kind per chunk
// (kWeight: chunk 1, kWeight0: chunk 0); Ws left over go after the last.
void place_weights(RankSlots& slots, bool split) {
  slots.resize(kPasses);
  slots.resize(split ? kPasses + 2 : kPasses + 1);
  const std::vector<std::tuple<int, int, int>> order = in_slot_order(slots);
  std::array<int, 2> waiting{0, 0};
  std::size_t next = 0;
  int slot = 0;
  const auto place = [&](int at) {
    for (int w = 0; w < 2; ++w) {
      if (waiting[static_cast<std::size_t>(w)] == 0) continue;
      slots[static_cast<std::size_t>(kWeight + w)].push_back(at);
      --waiting[static_cast<std::size_t>(w)];
      return true;
    }
    return false;
  };
  for (; next < order.size(); ++slot) {
    if (std::get<0>(order[next]) == slot) {
      const int kind = std::get<1>(order[next++]);
      if (kind == kInput1 || kind == kInput0) ++waiting[split && kind == kInput0 ? 1 : 0];
    } else {
      place(slot);
    }
  }
  while (place(slot)) ++slot;
}

// A rank's activations slot by slot, in chunk units: a forward holds one
// until its W, the Ws placed or (before they are) taken one per free slot
// while any I has one waiting. Kept up to date as passes move, so that a
// move is checked over the slots it changes only.
class RankMemory {
 public:
  RankMemory(const RankSlots& slots, int length)
      : weights_placed_(slots.size() > kPasses), kind_at_(static_cast<std::size_t>(length), -1) {
    for (int kind = 0; kind < static_cast<int>(slots.size()); ++kind) {
      for (const int slot : slots[static_cast<std::size_t>(kind)]) kind_at_[static_cast<std::size_t>(slot)] = kind;
    }
    held_.resize(kind_at_.size());
    waiting_.resize(kind_at_.size());
    replay(0, std::numeric_limits<int>::max(), std::numeric_limits<int>::max(), true);
  }

  int peak() const { return held_.empty() ? 0 : *std::max_element(held_.begin(), held_.end()); }

  // Moves a pass of `kind` from slot `from` to the free slot `to` (earlier)
  // if no slot then holds more than `limit`.
  bool try_move(int kind, int from, int to, int limit) {
    set(from, -1);
    set(to, kind);
    if (replay(to, from, limit, false)) {
      replay(to, from, std::numeric_limits<int>::max(), true);
      return true;
    }
    set(to, -1);
    set(from, kind);
    return false;
  }

 private:
  void set(int slot, int kind) { kind_at_[static_cast<std::size_t>(slot)] = kind; }

  // Replays from `start` with the state before it; from `settled` on
  // (past every changed slot), where the state matches the one kept,
  // nothing after changes and the replay stops. False if a slot holds more
  // than `limit`. With `keep`, stores the new states.
  bool replay(int start, int settled, int limit, bool keep) {
    int held = start > 0 ? held_[static_cast<std::size_t>(start - 1)] : 0;
    int waiting = start > 0 ? waiting_[static_cast<std::size_t>(start - 1)] : 0;
    for (std::size_t slot = static_cast<std::size_t>(start); slot < kind_at_.size(); ++slot) {
      const int kind = kind_at_[slot];
      if (kind == kForward0 || kind == kForward1) ++held;
      if (kind >= kWeight) --held;
      if (kind == kInput1 || kind == kInput0) waiting += weights_placed_ ? 0 : 1;
      if (kind < 0 && waiting > 0) {
        --held;
        --waiting;
      }
      if (held > limit) return false;
      if (static_cast<int>(slot) >= settled && held == held_[slot] && waiting == waiting_[slot]) return true;
      if (keep) {
        held_[slot] = held;
        waiting_[slot] = waiting;
      }
    }
    return true;
  }

  bool weights_placed_;
  std::vector<int> kind_at_;        // the pass kind in each slot, -1 where free
  std::vector<int> held_, waiting_;  // after each slot
};

// The n-th smallest (from 0) of two ascending lists, by bisection.
int nth_of_two(const std::vector<int>& a, const std::vector<int>& b, int n) {
  // Take i from a and n + 1 - i from b: the largest i whose a[i - 1] is
  // below b's next.
  int low = std::max(0, n + 1 - static_cast<int>(b.size()));
  int high = std::min(n + 1, static_cast<int>(a.size()));
  while (low < high) {
    const int i = (low + high + 1) / 2;
    const int j = n + 1 - i;
    if (j < static_cast<int>(b.size()) && a[static_cast<std::size_t>(i - 1)] > b[static_cast<std::size_t>(j)]) {
      high = i - 1;
    } else {
      low = i;
    }
  }
  const int j = n + 1 - low;
  const int from_a = low > 0 ? a[static_cast<std::size_t>(low - 1)] : std::numeric_limits<int>::min();
  const int from_b = j > 0 ? b[static_cast<std::size_t>(j - 1)] : std::numeric_limits<int>::min();
  return std::max(from_a, from_b);
}

class Reordering {
 public:
  Reordering(std::vector<RankSlots>& ranks, int microbatches) : ranks_(ranks), m_(microbatches) {}

  // Walks every pass in slot order (ties by rank, kind, micro-batch). Those
  // of the cool-down (after the last forward of chunk 0 on any rank, once
  // rank 0's first chunk-0 I has run), and with `move_warmup` those before
  // that I, move to the earliest free slot after their inputs where the
  // rank's peak stays within the peak before reordering.
  void run(bool move_warmup) {
    std::vector<RankMemory> memory;
    int limit = 0;
    for (const RankSlots& slots : ranks_) {
      memory.emplace_back(slots, last_slot(slots) + 1);
      limit = std::max(limit, memory.back().peak());
    }
    const int kinds = static_cast<int>(ranks_.front().size());
    std::vector<std::vector<bool>> occupied;
    for (const RankSlots& slots : ranks_) occupied.emplace_back(static_cast<std::size_t>(last_slot(slots) + 1), false);
    // The next pass of each (rank, kind) in a heap by (slot, rank, kind,
    // micro-batch): passes not yet walked keep their slots.
    using Pending = std::tuple<int, int, int, int>;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> next;
    for (int rank = 0; rank < ranks(); ++rank) {
      for (int kind = 0; kind < kinds; ++kind) {
        if (count(rank, kind) > 0) next.emplace(slot(rank, kind, 0), rank, kind, 0);
      }
    }
    enum { kWarmup, kSteady, kCooldown } phase = kWarmup;
    while (!next.empty()) {
      const auto [at, rank, kind, mb] = next.top();
      next.pop();
      if (mb + 1 < count(rank, kind)) next.emplace(slot(rank, kind, mb + 1), rank, kind, mb + 1);
      if (phase == kWarmup && kind == kInput0 && rank == 0) phase = kSteady;
      const bool move = phase == kCooldown || (phase == kWarmup && move_warmup);
      if (phase == kSteady && kind == kForward0 && mb == m_ - 1) phase = kCooldown;
      if (move) {
        std::vector<bool>& taken = occupied[static_cast<std::size_t>(rank)];
        for (int earlier = inputs_ready(rank, kind, mb); earlier < at; ++earlier) {
          if (taken[static_cast<std::size_t>(earlier)]) continue;
          if (memory[static_cast<std::size_t>(rank)].try_move(kind, at, earlier, limit)) {
            slot(rank, kind, mb) = earlier;
            break;
          }
        }
      }
      occupied[static_cast<std::size_t>(rank)][static_cast<std::size_t>(slot(rank, kind, mb))] = true;
    }
  }

 private:
  int ranks() const { return static_cast<int>(ranks_.size()); }
  int count(int rank, int kind) const {
    return static_cast<int>(ranks_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(kind)].size());
  }
  int& slot(int rank, int kind, int mb) {
    return ranks_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(mb)];
  }

  // The first slot after every input of the pass: the same pass of the
  // neighbour rank its data comes from, the pass before it on this rank
  // for the same micro-batch, and its own previous micro-batch; a W after
  // its rank's mb-th I.
  int inputs_ready(int rank, int kind, int mb) {
    int ready = -1;
    if (kind == kWeight) {
      const RankSlots& slots = ranks_[static_cast<std::size_t>(rank)];
      ready = nth_of_two(slots[kInput1], slots[kInput0], mb);
    } else {
      // Chunk 0's forward and chunk 1's I run from rank 0 up; chunk 1's
      // forward and chunk 0's I from the last rank down.
      const bool upward = kind == kForward0 || kind == kInput1;
      const int from = upward ? rank - 1 : rank + 1;
      if (from >= 0 && from < ranks()) ready = std::max(ready, slot(from, kind, mb));
      if (kind > kForward0) ready = std::max(ready, slot(rank, kind - 1, mb));
    }
    if (mb > 0) ready = std::max(ready, slot(rank, kind, mb - 1));
    return ready + 1;
  }

  std::vector<RankSlots>& ranks_;
  int m_;
};

// Runs every rank's passes in slot order, each as early as its inputs and
// its rank allow, with every pass one slot long (the paper's squeeze), and
// takes the start times as the new slots. A W waits only for its rank.
void squeeze(std::vector<RankSlots>& ranks) {
  const int count = static_cast<int>(ranks.size());
  // Slot by slot, rank by rank: a pass's inputs sit in earlier slots.
  std::vector<std::vector<std::tuple<int, int, int>>> orders;
  std::size_t longest = 0;
  for (const RankSlots& slots : ranks) {
    orders.push_back(in_slot_order(slots));
    longest = std::max(longest, static_cast<std::size_t>(last_slot(slots) + 1));
  }
  std::vector<RankSlots> ends = ranks;
  std::vector<int> rank_end(static_cast<std::size_t>(count), 0);
  std::vector<std::size_t> next(static_cast<std::size_t>(count), 0);
  const auto end_of = [&](int rank, int kind, int mb) {
    return ends[static_cast<std::size_t>(rank)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(mb)];
  };
  for (int slot = 0; slot < static_cast<int>(longest); ++slot) {
    for (int rank = 0; rank < count; ++rank) {
      const auto& order = orders[static_cast<std::size_t>(rank)];
      std::size_t& at = next[static_cast<std::size_t>(rank)];
      if (at >= order.size() || std::get<0>(order[at]) != slot) continue;
      const auto [_, kind, mb] = order[at++];
      int start = rank_end[static_cast<std::size_t>(rank)];
      if (kind < kWeight) {
        const bool upward = kind == kForward0 || kind == kInput1;
        const int from = upward ? rank - 1 : rank + 1;
        if (from >= 0 && from < count) start = std::max(start, end_of(from, kind, mb));
        if (kind > kForward0) start = std::max(start, end_of(rank, kind - 1, mb));
      }
      if (mb > 0) start = std::max(start, end_of(rank, kind, mb - 1));
      ends[static_cast<std::size_t>(rank)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(mb)] = start + 1;
      rank_end[static_cast<std::size_t>(rank)] = start + 1;
      ranks[static_cast<std::size_t>(rank)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(mb)] = start;
    }
  }
}

Schedule controllable_memory_v(const PipelineShape& shape, const char* name, Offsets (*offsets)(int, int)) {
  require_virtual_stages(shape, name, 2);
  const int p = shape.ranks, m = shape.microbatches;
  std::vector<RankSlots> ranks;
  for (int rank = 0; rank < p; ++rank) {
    RankSlots slots(kPasses);
    const Offsets first = offsets(rank, p);
    for (int kind = 0; kind < kPasses; ++kind) {
      for (int mb = 0; mb < m; ++mb) slots[static_cast<std::size_t>(kind)].push_back(first[static_cast<std::size_t>(kind)] + 6 * mb);
    }
    ranks.push_back(std::move(slots));
  }
  // Reorder with the Ws in place and squeeze; then, the Ws taken out,
  // reorder the cool-down again, put the Ws back and squeeze; then place
  // one W kind per chunk in the slots the passes leave.
  for (RankSlots& slots : ranks) place_weights(slots, false);
  Reordering(ranks, m).run(true);
  squeeze(ranks);
  for (RankSlots& slots : ranks) slots.resize(kPasses);
  Reordering(ranks, m).run(false);
  for (RankSlots& slots : ranks) place_weights(slots, false);
  squeeze(ranks);
  Schedule schedule = make_schedule(name, shape, StagePlacement::kV);
  for (int rank = 0; rank < p; ++rank) {
    RankSlots& slots = ranks[static_cast<std::size_t>(rank)];
    place_weights(slots, true);
    const int chunk0 = rank, chunk1 = 2 * p - 1 - rank;
    for (const auto& [slot, kind, mb] : in_slot_order(slots)) {
      const bool first_chunk = kind == kForward0 || kind == kInput0 || kind == kWeight0;
      const OpKind op = kind == kForward0 || kind == kForward1 ? OpKind::kForward
                        : kind >= kWeight                     ? OpKind::kBackwardWeight
                                                              : OpKind::kBackwardInput;
      schedule.actions[static_cast<std::size_t>(rank)].push_back({first_chunk ? chunk0 : chunk1, mb, op});
    }
  }
  return schedule;
}

}  // namespace

Schedule generate_v_min(const PipelineShape& shape) { return controllable_memory_v(shape, "VMin", v_min_offsets); }

Schedule generate_v_half(const PipelineShape& shape) { return controllable_memory_v(shape, "VHalf", v_half_offsets); }

}  // namespace pipeplan::sim
