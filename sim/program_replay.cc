#include "sim/program_replay.h"

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
constexpr std::uint32_t kNoAction = 0xffffffffu;

// A boundary's transfer: the link it takes (-1: the stages share a rank) and how long it lasts.
struct Crossing {
  int link = -1;
  double duration_s = 0;
};

struct LinkState {
  int source = -1;       // the rank sending on it, while there is one
  bool shared = false;   // several ranks send on it: not ordered here
  double free_at_s = 0;  // queued links: when the last transfer ends
  std::vector<std::pair<double, double>> busy;  // shared links: every transfer
};

class ProgramReplay {
 public:
  ProgramReplay(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                std::span<EngineObserver* const> observers, const ReplayOptions& options)
      : schedule_(schedule),
        costs_(costs),
        observers_(observers),
        queue_links_(options.queue_links),
        track_path_(options.path != nullptr) {
    const auto slots = static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(schedule.microbatches) * 2;
    ready_.assign(slots, kNotReady);
    position_.assign(static_cast<std::size_t>(schedule.ranks), 0);
    free_at_.assign(static_cast<std::size_t>(schedule.ranks), 0.0);
    waiting_for_.assign(static_cast<std::size_t>(schedule.ranks), kNone);
    durations_.reserve(static_cast<std::size_t>(schedule.stages) * kComputeKinds);
    for (const StageCost& stage : costs.stages) {
      for (int kind = 0; kind < kComputeKinds; ++kind) {
        durations_.push_back(action_duration_s(stage, static_cast<OpKind>(kind)));
      }
    }
    assign_links(costs, topology);
    if (track_path_) {
      std::uint32_t offset = 0;
      for (const auto& actions : schedule.actions) {
        rank_offset_.push_back(offset);
        offset += static_cast<std::uint32_t>(actions.size());
      }
      predecessor_.assign(offset, kNoAction);
      producer_.assign(slots, kNoAction);
      last_on_rank_.assign(static_cast<std::size_t>(schedule.ranks), kNoAction);
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
    return {makespan_, executed_, use_.transfers, use_.links};
  }

  LinkUse link_use() {
    for (LinkState& link : links_) {
      if (!link.shared || use_.unordered) continue;
      if (!std::is_sorted(link.busy.begin(), link.busy.end())) std::sort(link.busy.begin(), link.busy.end());
      for (std::size_t i = 1; i < link.busy.size() && !use_.unordered; ++i) {
        use_.unordered = link.busy[i].first < link.busy[i - 1].second;
      }
    }
    return use_;
  }

  // Walks the recorded waits back from the action that ends last.
  CriticalPath critical_path() const {
    CriticalPath path;
    path.length_s = makespan_;
    for (const auto& [rank, action] : chain_into(last_)) extend_path(path.segments, rank, *action);
    return path;
  }

 private:
  // The engine's link resources, numbered as it numbers them, and each
  // boundary's transfer on them.
  void assign_links(const PipelineCosts& costs, const Topology& topology) {
    forward_.assign(static_cast<std::size_t>(schedule_.stages), {});
    backward_.assign(static_cast<std::size_t>(schedule_.stages), {});
    std::unordered_map<std::uint64_t, int> ids;
    auto cross = [&](int stage, int to_stage) {
      const int src = schedule_.rank_of(stage), dst = schedule_.rank_of(to_stage);
      const auto [it, inserted] = ids.try_emplace(topology.link_key(src, dst), static_cast<int>(links_.size()));
      if (inserted) links_.emplace_back();
      LinkState& link = links_[static_cast<std::size_t>(it->second)];
      link.shared = link.shared || (link.source >= 0 && link.source != src);
      link.source = src;
      // The message crosses the boundary after the lower of the two stages.
      const std::int64_t bytes = costs.stages[static_cast<std::size_t>(std::min(stage, to_stage))].send_bytes;
      return Crossing{it->second, topology.spec(src, dst).transfer_time_s(bytes)};
    };
    for (int stage = 0; stage < schedule_.stages; ++stage) {
      const int rank = schedule_.rank_of(stage);
      if (stage + 1 < schedule_.stages && schedule_.rank_of(stage + 1) != rank) {
        forward_[static_cast<std::size_t>(stage)] = cross(stage, stage + 1);
      }
      if (stage > 0 && schedule_.rank_of(stage - 1) != rank) {
        backward_[static_cast<std::size_t>(stage)] = cross(stage, stage - 1);
      }
    }
    use_.links = static_cast<int>(links_.size());
  }

  // The recorded waits into action `last`, first to last, with their ranks.
  std::vector<std::pair<int, const Action*>> chain_into(std::uint32_t last) const {
    std::vector<std::pair<int, const Action*>> chain;
    for (std::uint32_t at = last; at != kNoAction; at = predecessor_[at]) {
      const auto rank = static_cast<int>(std::upper_bound(rank_offset_.begin(), rank_offset_.end(), at) -
                                         rank_offset_.begin()) - 1;
      const auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
      chain.emplace_back(rank, &actions[at - rank_offset_[static_cast<std::size_t>(rank)]]);
    }
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

  std::int64_t key(int stage, int mb, int direction) const {
    return (static_cast<std::int64_t>(stage) * schedule_.microbatches + mb) * 2 + direction;
  }

  // The slot of the action's input, or kNone when it needs none.
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
      const bool pair = action.overlapped && position_[r] + 1 < actions.size() && is_compute(actions[position_[r] + 1].kind);
      if (pair && !input_arrived(rank, actions[position_[r] + 1], start, waited_on)) return;
      if (!pair) {
        run_compute(rank, action, start, waited_on, true);
        ++position_[r];
        continue;
      }
      // The pair runs as one unit and sends both results at its end, the
      // forward's first, as the engine does after the lowered pair.
      const Action& backward = actions[position_[r] + 1];
      const PairSaving saving = pair_saving(costs_, action, backward);
      run_compute(rank, action, start, waited_on, false, saving.first_s, saving.first_hidden_s);
      ++position_[r];
      run_compute(rank, backward, free_at_[r], track_path_ ? last_on_rank_[r] : kNoAction, false, saving.second_s,
                  saving.second_hidden_s);
      send_output(action, free_at_[r]);
      send_output(backward, free_at_[r]);
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

  // `saving_s`: what the action's overlapped pair hides of it.
  void run_compute(int rank, const Action& action, double start, std::uint32_t waited_on, bool send,
                   double saving_s = 0, double hidden_s = 0) {
    // Summed as the engine sums it: its duration first.
    const double duration =
        durations_[static_cast<std::size_t>(action.stage) * kComputeKinds + static_cast<std::size_t>(action.kind)] -
        saving_s;
    const double end = start + duration;
    const double comm = action_comm_s(costs_.stages[static_cast<std::size_t>(action.stage)], action.kind);
    const ComputeRecord record{rank, action, start, end, comm, hidden_s};
    for (EngineObserver* observer : observers_) observer->on_compute_start(record);
    for (EngineObserver* observer : observers_) observer->on_compute_end(record);
    free_at_[static_cast<std::size_t>(rank)] = end;
    if (track_path_) {
      const std::uint32_t id = rank_offset_[static_cast<std::size_t>(rank)] +
                               static_cast<std::uint32_t>(position_[static_cast<std::size_t>(rank)]);
      predecessor_[id] = waited_on;
      last_on_rank_[static_cast<std::size_t>(rank)] = id;
      last_run_ = id;
      if (end > makespan_ || last_ == kNoAction) last_ = id;
    }
    makespan_ = std::max(makespan_, end);
    ++executed_;
    if (send) send_output(action, end);
  }

  // The action's output leaves at `at` for the stage that needs it.
  void send_output(const Action& action, double at) {
    const int s = action.stage;
    const int mb = action.microbatch;
    if (action.kind == OpKind::kForward && s + 1 < schedule_.stages) {
      produce(key(s + 1, mb, 0), arrival(forward_[static_cast<std::size_t>(s)], at), s + 1);
    } else if (produces_input_grad(action.kind) && s > 0) {
      produce(key(s - 1, mb, 1), arrival(backward_[static_cast<std::size_t>(s)], at), s - 1);
    }
  }

  // When a message issued at `issue` over `crossing` has arrived.
  double arrival(const Crossing& crossing, double issue) {
    if (crossing.link < 0) return issue;  // the next stage is on this rank
    ++use_.transfers;
    LinkState& link = links_[static_cast<std::size_t>(crossing.link)];
    if (link.shared) {
      link.busy.emplace_back(issue, issue + crossing.duration_s);
      return issue + crossing.duration_s;
    }
    if (!queue_links_) return issue + crossing.duration_s;
    const double start = std::max(issue, link.free_at_s);
    use_.waited = use_.waited || start > issue;
    link.free_at_s = start + crossing.duration_s;
    return link.free_at_s;
  }

  void produce(std::int64_t data, double arrival, int consumer_stage) {
    ready_[static_cast<std::size_t>(data)] = arrival;
    if (track_path_) producer_[static_cast<std::size_t>(data)] = last_run_;
    const int consumer = schedule_.rank_of(consumer_stage);
    std::int64_t& waiting = waiting_for_[static_cast<std::size_t>(consumer)];
    if (waiting != data) return;
    waiting = kNone;
    runnable_.push_back(consumer);
  }

  const Schedule& schedule_;
  const PipelineCosts& costs_;
  std::span<EngineObserver* const> observers_;
  bool queue_links_;
  bool track_path_;
  std::vector<double> durations_;  // [stage][compute kind]
  std::vector<double> ready_;      // arrival of each (stage, mb, direction) input
  std::vector<std::size_t> position_;
  std::vector<double> free_at_;
  std::vector<std::int64_t> waiting_for_;
  std::vector<Crossing> forward_, backward_;  // per stage
  std::vector<LinkState> links_;
  std::vector<int> runnable_;
  LinkUse use_;
  double makespan_ = 0;
  std::size_t executed_ = 0;
  // The critical path, when tracked: per action (rank offset + position)
  // the action it waited on, and for each datum the action that produced it.
  std::vector<std::uint32_t> rank_offset_;
  std::vector<std::uint32_t> predecessor_;
  std::vector<std::uint32_t> producer_;
  std::vector<std::uint32_t> last_on_rank_;
  std::uint32_t last_run_ = kNoAction;  // the action whose outputs are being sent
  std::uint32_t last_ = kNoAction;      // the action that ends last
};

}  // namespace

EngineResult replay_programs(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                             std::span<EngineObserver* const> observers, const ReplayOptions& options,
                             LinkUse* links) {
  ProgramReplay replay(schedule, costs, topology, observers, options);
  const EngineResult result = replay.run();
  if (options.path != nullptr) *options.path = replay.critical_path();
  if (links != nullptr) *links = replay.link_use();
  return result;
}

}  // namespace pipeplan::sim
