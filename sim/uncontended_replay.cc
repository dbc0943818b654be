#include "sim/uncontended_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

constexpr double kNotReady = -1.0;
constexpr std::int64_t kNone = -1;

class UncontendedReplay {
 public:
  UncontendedReplay(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                    std::span<EngineObserver* const> observers, bool track_path, bool track_links)
      : schedule_(schedule), observers_(observers), track_path_(track_path), track_links_(track_links) {
    if (track_links_) assign_links(topology);
    if (track_path_) {
      std::uint32_t offset = 0;
      for (const auto& actions : schedule.actions) {
        rank_offset_.push_back(offset);
        offset += static_cast<std::uint32_t>(actions.size());
      }
      predecessor_.assign(offset, kNoAction);
      producer_.assign(static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(schedule.microbatches) * 2,
                       kNoAction);
      last_on_rank_.assign(static_cast<std::size_t>(schedule.ranks), kNoAction);
    }
    ready_.assign(static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(schedule.microbatches) * 2,
                  kNotReady);
    position_.assign(static_cast<std::size_t>(schedule.ranks), 0);
    free_at_.assign(static_cast<std::size_t>(schedule.ranks), 0.0);
    waiting_for_.assign(static_cast<std::size_t>(schedule.ranks), kNone);
    // Transfer time across each boundary: forward (s -> s+1) and backward (s -> s-1).
    durations_.reserve(static_cast<std::size_t>(schedule.stages) * kComputeKinds);
    for (const StageCost& stage : costs.stages) {
      for (int kind = 0; kind < kComputeKinds; ++kind) {
        durations_.push_back(action_duration_s(stage, static_cast<OpKind>(kind)));
      }
    }
    forward_delay_.assign(static_cast<std::size_t>(schedule.stages), 0.0);
    backward_delay_.assign(static_cast<std::size_t>(schedule.stages), 0.0);
    for (int s = 0; s < schedule.stages; ++s) {
      const std::int64_t bytes = costs.stages[static_cast<std::size_t>(s)].send_bytes;
      const int rank = schedule.rank_of(s);
      if (s + 1 < schedule.stages && schedule.rank_of(s + 1) != rank) {
        forward_delay_[static_cast<std::size_t>(s)] =
            topology.spec(rank, schedule.rank_of(s + 1)).transfer_time_s(bytes);
      }
      if (s > 0 && schedule.rank_of(s - 1) != rank) {
        backward_delay_[static_cast<std::size_t>(s)] =
            topology.spec(rank, schedule.rank_of(s - 1)).transfer_time_s(bytes);
      }
    }
  }

  EngineResult run() {
    for (int rank = schedule_.ranks - 1; rank >= 0; --rank) runnable_.push_back(rank);
    while (!runnable_.empty()) {
      const int rank = runnable_.back();
      runnable_.pop_back();
      advance(rank);
    }
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      const auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
      if (position_[static_cast<std::size_t>(rank)] < actions.size()) {
        throw ScheduleError(fmt::format("the schedule deadlocks: rank {} waits forever at {}", rank,
                                        to_string(actions[position_[static_cast<std::size_t>(rank)]])));
      }
    }
    return {makespan_, executed_, 0, 0};
  }

  // Whether any two transfers of one link overlapped in time, and the counts.
  LinkUse link_use() {
    LinkUse use;
    use.links = static_cast<int>(busy_.size());
    for (auto& intervals : busy_) {
      use.transfers += intervals.size();
      std::sort(intervals.begin(), intervals.end());
      for (std::size_t i = 1; i < intervals.size() && !use.queued; ++i) {
        use.queued = intervals[i].first < intervals[i - 1].second;
      }
    }
    return use;
  }

  // Walks the recorded predecessors back from the action that ends last.
  CriticalPath critical_path() const {
    CriticalPath path;
    path.length_s = makespan_;
    std::vector<std::uint32_t> chain;
    for (std::uint32_t at = last_; at != kNoAction; at = predecessor_[at]) chain.push_back(at);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const auto rank = static_cast<int>(std::upper_bound(rank_offset_.begin(), rank_offset_.end(), *it) -
                                         rank_offset_.begin()) - 1;
      const auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
      extend_path(path.segments, rank, actions[*it - rank_offset_[static_cast<std::size_t>(rank)]]);
    }
    return path;
  }

 private:
  std::int64_t key(int stage, int mb, int direction) const {
    return (static_cast<std::int64_t>(stage) * schedule_.microbatches + mb) * 2 + direction;
  }

  // The arrival time of the action's input, or kNotReady (kNone: no input).
  std::int64_t input_key(const Action& action) const {
    if (action.kind == OpKind::kForward && action.stage > 0) return key(action.stage, action.microbatch, 0);
    if (produces_input_grad(action.kind) && action.stage + 1 < schedule_.stages) {
      return key(action.stage, action.microbatch, 1);
    }
    return kNone;
  }

  // Runs `rank` until it blocks on an input that has not been produced.
  void advance(int rank) {
    const auto r = static_cast<std::size_t>(rank);
    const auto& actions = schedule_.actions[r];
    while (position_[r] < actions.size()) {
      const Action& action = actions[position_[r]];
      if (is_comm(action.kind)) {
        ++position_[r];
        continue;
      }
      double start = free_at_[r];
      std::uint32_t waited_on = track_path_ ? last_on_rank_[r] : kNoAction;
      if (!input_arrived(rank, action, start, waited_on)) return;
      if (action.overlapped && position_[r] + 1 < actions.size() &&
          !input_arrived(rank, actions[position_[r] + 1], start, waited_on)) {
        return;
      }
      if (action.overlapped && position_[r] + 1 < actions.size() && is_compute(actions[position_[r] + 1].kind)) {
        // The pair runs as one unit and sends both results at its end, as
        // the engine does after the lowered pair's two SENDs.
        run_compute(rank, action, start, waited_on, false);
        ++position_[r];
        const double forward_end = free_at_[r];
        run_compute(rank, actions[position_[r]], forward_end, last_on_rank_.empty() ? kNoAction : last_on_rank_[r]);
        send_output(action, free_at_[r]);
        ++position_[r];
        continue;
      }
      run_compute(rank, action, start, waited_on);
      ++position_[r];
    }
  }

  // False (and the rank parked) if the input is missing; else raises `start`
  // (and names its producer as what the action waited on, when later).
  bool input_arrived(int rank, const Action& action, double& start, std::uint32_t& waited_on) {
    const std::int64_t input = input_key(action);
    if (input == kNone) return true;
    const double arrival = ready_[static_cast<std::size_t>(input)];
    if (arrival == kNotReady) {
      waiting_for_[static_cast<std::size_t>(rank)] = input;
      return false;
    }
    if (arrival > start && track_path_) waited_on = producer_[static_cast<std::size_t>(input)];
    start = std::max(start, arrival);
    return true;
  }

  void run_compute(int rank, const Action& action, double start, std::uint32_t waited_on, bool send = true) {
    const double end =
        start + durations_[static_cast<std::size_t>(action.stage) * kComputeKinds + static_cast<std::size_t>(action.kind)];
    const ComputeRecord record{rank, action, start, end};
    for (EngineObserver* observer : observers_) observer->on_compute_start(record);
    for (EngineObserver* observer : observers_) observer->on_compute_end(record);
    free_at_[static_cast<std::size_t>(rank)] = end;
    if (track_path_) {
      const std::uint32_t id = rank_offset_[static_cast<std::size_t>(rank)] +
                               static_cast<std::uint32_t>(position_[static_cast<std::size_t>(rank)]);
      predecessor_[id] = waited_on;
      last_on_rank_[static_cast<std::size_t>(rank)] = id;
      current_ = id;
      if (end > makespan_ || last_ == kNoAction) last_ = id;
    }
    makespan_ = std::max(makespan_, end);
    ++executed_;
    if (send) send_output(action, end);
  }

  // The action's output leaves at `at` for the stage that needs it.
  void send_output(const Action& action, double end) {
    const int s = action.stage;
    if (action.kind == OpKind::kForward && s + 1 < schedule_.stages) {
      const double delay = forward_delay_[static_cast<std::size_t>(s)];
      if (track_links_) note_transfer(forward_link_[static_cast<std::size_t>(s)], end, delay);
      produce(key(s + 1, action.microbatch, 0), end + delay, s + 1);
    } else if (produces_input_grad(action.kind) && s > 0) {
      const double delay = backward_delay_[static_cast<std::size_t>(s)];
      if (track_links_) note_transfer(backward_link_[static_cast<std::size_t>(s)], end, delay);
      produce(key(s - 1, action.microbatch, 1), end + delay, s - 1);
    }
  }

  // The engine's link resources, numbered as it numbers them.
  void assign_links(const Topology& topology) {
    forward_link_.assign(static_cast<std::size_t>(schedule_.stages), -1);
    backward_link_.assign(static_cast<std::size_t>(schedule_.stages), -1);
    std::unordered_map<std::uint64_t, int> ids;
    auto link_for = [&](int src, int dst) {
      const auto [it, inserted] = ids.try_emplace(topology.link_key(src, dst), static_cast<int>(busy_.size()));
      if (inserted) busy_.emplace_back();
      return it->second;
    };
    for (int stage = 0; stage < schedule_.stages; ++stage) {
      const int rank = schedule_.rank_of(stage);
      if (stage + 1 < schedule_.stages && schedule_.rank_of(stage + 1) != rank) {
        forward_link_[static_cast<std::size_t>(stage)] = link_for(rank, schedule_.rank_of(stage + 1));
      }
      if (stage > 0 && schedule_.rank_of(stage - 1) != rank) {
        backward_link_[static_cast<std::size_t>(stage)] = link_for(rank, schedule_.rank_of(stage - 1));
      }
    }
  }

  void note_transfer(int link, double start, double duration) {
    if (link >= 0) busy_[static_cast<std::size_t>(link)].emplace_back(start, start + duration);
  }

  void produce(std::int64_t data, double arrival, int consumer_stage) {
    ready_[static_cast<std::size_t>(data)] = arrival;
    if (track_path_) producer_[static_cast<std::size_t>(data)] = current_;
    const int consumer = schedule_.rank_of(consumer_stage);
    std::int64_t& waiting = waiting_for_[static_cast<std::size_t>(consumer)];
    if (waiting != data) return;
    waiting = kNone;
    runnable_.push_back(consumer);
  }

  static constexpr int kComputeKinds = 4;  // F, B, I, W lead the OpKind enum
  const Schedule& schedule_;
  std::span<EngineObserver* const> observers_;
  std::vector<double> durations_;  // [stage][compute kind]
  std::vector<double> ready_;
  std::vector<std::size_t> position_;
  std::vector<double> free_at_;
  std::vector<std::int64_t> waiting_for_;
  std::vector<double> forward_delay_;
  std::vector<double> backward_delay_;
  std::vector<int> runnable_;
  double makespan_ = 0;
  std::size_t executed_ = 0;
  // The critical path, when tracked: per action (rank offset + position)
  // the action it waited on, and for each datum the action that produced it.
  static constexpr std::uint32_t kNoAction = 0xffffffffu;
  bool track_path_ = false;
  std::vector<std::uint32_t> rank_offset_;
  std::vector<std::uint32_t> predecessor_;
  std::vector<std::uint32_t> producer_;
  std::vector<std::uint32_t> last_on_rank_;
  std::uint32_t current_ = kNoAction;  // the action that produced the datum being delivered
  std::uint32_t last_ = kNoAction;     // the action that ends last
  // Link use, when tracked: each boundary's link, and each link's transfers.
  bool track_links_ = false;
  std::vector<int> forward_link_, backward_link_;
  std::vector<std::vector<std::pair<double, double>>> busy_;
};

}  // namespace

EngineResult replay_uncontended(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                                std::span<EngineObserver* const> observers, CriticalPath* path) {
  UncontendedReplay replay(schedule, costs, topology, observers, path != nullptr, false);
  const EngineResult result = replay.run();
  if (path != nullptr) *path = replay.critical_path();
  return result;
}

EngineResult replay_uncontended(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                                std::span<EngineObserver* const> observers, CriticalPath* path, LinkUse& links) {
  UncontendedReplay replay(schedule, costs, topology, observers, path != nullptr, true);
  EngineResult result = replay.run();
  if (path != nullptr) *path = replay.critical_path();
  links = replay.link_use();
  result.transfers = links.transfers;
  result.links = links.links;
  return result;
}

}  // namespace pipeplan::sim
