#include "sim/uncontended_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

constexpr double kNotReady = -1.0;
constexpr std::int64_t kNone = -1;

class UncontendedReplay {
 public:
  UncontendedReplay(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                    std::span<EngineObserver* const> observers)
      : schedule_(schedule), observers_(observers) {
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
      if (!input_arrived(rank, action, start)) return;
      if (action.overlapped && position_[r] + 1 < actions.size() &&
          !input_arrived(rank, actions[position_[r] + 1], start)) {
        return;
      }
      run_compute(rank, action, start);
      ++position_[r];
    }
  }

  // False (and the rank parked) if the input is missing; else raises `start`.
  bool input_arrived(int rank, const Action& action, double& start) {
    const std::int64_t input = input_key(action);
    if (input == kNone) return true;
    const double arrival = ready_[static_cast<std::size_t>(input)];
    if (arrival == kNotReady) {
      waiting_for_[static_cast<std::size_t>(rank)] = input;
      return false;
    }
    start = std::max(start, arrival);
    return true;
  }

  void run_compute(int rank, const Action& action, double start) {
    const double end =
        start + durations_[static_cast<std::size_t>(action.stage) * kComputeKinds + static_cast<std::size_t>(action.kind)];
    const ComputeRecord record{rank, action, start, end};
    for (EngineObserver* observer : observers_) observer->on_compute_start(record);
    for (EngineObserver* observer : observers_) observer->on_compute_end(record);
    free_at_[static_cast<std::size_t>(rank)] = end;
    makespan_ = std::max(makespan_, end);
    ++executed_;
    const int s = action.stage;
    if (action.kind == OpKind::kForward && s + 1 < schedule_.stages) {
      produce(key(s + 1, action.microbatch, 0), end + forward_delay_[static_cast<std::size_t>(s)], s + 1);
    } else if (produces_input_grad(action.kind) && s > 0) {
      produce(key(s - 1, action.microbatch, 1), end + backward_delay_[static_cast<std::size_t>(s)], s - 1);
    }
  }

  void produce(std::int64_t data, double arrival, int consumer_stage) {
    ready_[static_cast<std::size_t>(data)] = arrival;
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
};

}  // namespace

EngineResult replay_uncontended(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                                std::span<EngineObserver* const> observers) {
  return UncontendedReplay(schedule, costs, topology, observers).run();
}

}  // namespace pipeplan::sim
