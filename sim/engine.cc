#include "sim/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "sim/event_queue.h"

namespace pipeplan::sim {
namespace {

constexpr std::int64_t kNotWaiting = -1;
constexpr double kNotReady = -1.0;

// Data a rank can wait for, keyed by (stage, mb, kind): the activation from
// the previous stage, the gradient from the next one, and an offloaded
// micro-batch's activations on the host and back on the device.
enum Direction : std::int64_t { kActivation = 0, kGradient = 1, kOffloaded = 2, kReloaded = 3 };
constexpr std::int64_t kDataKinds = 4;

struct Transfer {
  std::int64_t data_key;
  int src_rank;
  int dst_rank;
  Action send;
  std::int64_t bytes;
  double issue_s;
  double start_s;
  double duration_s;
};

struct Link {
  LinkSpec spec;
  bool busy = false;
  Transfer current{};
  std::vector<Transfer> queue;  // FIFO: queue_head indexes the next one
  std::size_t queue_head = 0;
};

struct RankState {
  std::size_t pc = 0;
  std::int64_t waiting_for = kNotWaiting;  // data key this rank is blocked on
  bool waiting_for_send = false;           // blocked in a SEND (no overlap)
  double wait_start_s = 0;
  double compute_start_s = 0;
  bool running = false;
};


class Engine {
 public:
  Engine(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology, const EngineOptions& options,
         std::span<EngineObserver* const> observers)
      : schedule_(schedule), costs_(costs), options_(options), observers_(observers) {
    const auto slots = static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(schedule.microbatches);
    ready_.assign(slots * kDataKinds, kNotReady);
    reloading_.assign(slots, 0);
    reload_pending_.assign(slots, 0);
    durations_.reserve(static_cast<std::size_t>(schedule.stages) * kComputeKinds);
    for (const StageCost& stage : costs.stages) {
      for (int kind = 0; kind < kComputeKinds; ++kind) {
        durations_.push_back(action_duration_s(stage, static_cast<OpKind>(kind)));
      }
    }
    ranks_.resize(static_cast<std::size_t>(schedule.ranks));
    build_links(topology);
    if (std::max<std::size_t>(ranks_.size(), links_.size()) > EventQueue::kIdMask) {
      throw InputError(fmt::format("{} ranks and {} links exceed the engine's limit of {}", ranks_.size(),
                                   links_.size(), EventQueue::kIdMask));
    }
  }

  EngineResult run() {
    for (int rank = 0; rank < schedule_.ranks; ++rank) advance(rank);
    while (!events_.empty()) {
      const EventQueue::Event event = events_.pop();
      now_ = event.time_s;
      if (EventQueue::is_transfer(event)) {
        finish_transfer(EventQueue::id(event));
      } else {
        finish_compute(EventQueue::id(event));
      }
    }
    check_finished();
    return {now_, executed_, transfers_, static_cast<int>(links_.size())};
  }

 private:
  // One link per boundary and direction that crosses ranks; several
  // boundaries may share a link resource (same Topology key).
  void build_links(const Topology& topology) {
    const auto stages = static_cast<std::size_t>(schedule_.stages);
    forward_link_.assign(stages, -1);
    backward_link_.assign(stages, -1);
    std::unordered_map<std::uint64_t, int> ids;
    auto link_for = [&](int src, int dst) {
      const auto [it, inserted] = ids.try_emplace(topology.link_key(src, dst), static_cast<int>(links_.size()));
      if (inserted) {
        Link link;
        link.spec = topology.spec(src, dst);
        links_.push_back(std::move(link));
      }
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
    // Each GPU's host link, a resource per direction.
    if (!topology.has_host_link()) return;
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      for (std::vector<int>* links : {&offload_link_, &reload_link_}) {
        links->push_back(static_cast<int>(links_.size()));
        Link link;
        link.spec = topology.host;
        links_.push_back(std::move(link));
      }
    }
  }

  std::int64_t data_key(int stage, int mb, Direction direction) const {
    return slot(stage, mb) * kDataKinds + direction;
  }
  std::int64_t slot(int stage, int mb) const { return static_cast<std::int64_t>(stage) * schedule_.microbatches + mb; }
  bool is_ready(std::int64_t key) const { return ready_[static_cast<std::size_t>(key)] != kNotReady; }

  // The input a compute action waits for, or kNotWaiting if none.
  std::int64_t input_of(const Action& action) const {
    if (action.kind == OpKind::kForward && action.stage > 0) {
      return data_key(action.stage, action.microbatch, kActivation);
    }
    if (produces_input_grad(action.kind) && action.stage + 1 < schedule_.stages) {
      return data_key(action.stage, action.microbatch, kGradient);
    }
    return kNotWaiting;
  }

  // True (and the rank marked waiting) if the action's input has not
  // arrived, or, for the backward of an offloaded micro-batch, its
  // activations are not back.
  bool wait_for_input(RankState& state, const Action& action) {
    const std::int64_t key = input_of(action);
    if (key != kNotWaiting && !is_ready(key)) {
      state.waiting_for = key;
      return true;
    }
    if (!produces_input_grad(action.kind) || !reloading_[static_cast<std::size_t>(slot(action.stage, action.microbatch))]) {
      return false;
    }
    const std::int64_t back = data_key(action.stage, action.microbatch, kReloaded);
    if (is_ready(back)) return false;
    state.waiting_for = back;
    return true;
  }

  // Runs rank's actions from its program counter until one must wait.
  void advance(int rank) {
    RankState& state = ranks_[static_cast<std::size_t>(rank)];
    const auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
    while (state.pc < actions.size()) {
      const Action& action = actions[state.pc];
      switch (action.kind) {
        case OpKind::kSendForward:
        case OpKind::kSendBackward:
          issue_transfer(rank, action);
          if (!options_.overlap_comm) {
            state.waiting_for_send = true;
            state.wait_start_s = now_;
            return;
          }
          ++state.pc;
          ++executed_;
          continue;
        case OpKind::kOffload:
        case OpKind::kReload:
          // Copies run beside the compute: the stream moves on.
          issue_host_copy(rank, action);
          ++state.pc;
          ++executed_;
          continue;
        case OpKind::kRecvForward:
        case OpKind::kRecvBackward: {
          const std::int64_t key = data_key(action.stage, action.microbatch,
                                            action.kind == OpKind::kRecvForward ? kActivation : kGradient);
          if (!options_.overlap_comm && !is_ready(key)) {
            state.waiting_for = key;
            state.wait_start_s = now_;
            return;
          }
          ++state.pc;
          ++executed_;
          continue;
        }
        default: {
          if (wait_for_input(state, action)) return;
          // An overlapped pair starts only when the backward's input is there too.
          if (action.overlapped && state.pc + 1 < actions.size() && wait_for_input(state, actions[state.pc + 1])) {
            return;
          }
          start_compute(rank, action);
          return;
        }
      }
    }
  }

  void start_compute(int rank, const Action& action) {
    RankState& state = ranks_[static_cast<std::size_t>(rank)];
    const double saving = paired_saving_s(costs_, schedule_.actions[static_cast<std::size_t>(rank)], state.pc);
    const double duration =
        durations_[static_cast<std::size_t>(action.stage) * kComputeKinds + static_cast<std::size_t>(action.kind)] -
        saving;
    state.running = true;
    state.compute_start_s = now_;
    const double comm = action_comm_s(costs_.stages[static_cast<std::size_t>(action.stage)], action.kind);
    const ComputeRecord record{
        rank, action,
        now_, now_ + duration,
        comm, paired_hidden_s(costs_, schedule_.actions[static_cast<std::size_t>(rank)], state.pc)};
    for (EngineObserver* observer : observers_) observer->on_compute_start(record);
    events_.push(now_ + duration, rank, false);
  }

  void finish_compute(int rank) {
    RankState& state = ranks_[static_cast<std::size_t>(rank)];
    const Action action = schedule_.actions[static_cast<std::size_t>(rank)][state.pc];
    const ComputeRecord record{rank,
                               action,
                               state.compute_start_s,
                               now_,
                               action_comm_s(costs_.stages[static_cast<std::size_t>(action.stage)], action.kind),
                               paired_hidden_s(costs_, schedule_.actions[static_cast<std::size_t>(rank)], state.pc)};
    for (EngineObserver* observer : observers_) observer->on_compute_end(record);
    state.running = false;
    ++state.pc;
    ++executed_;
    // A neighbour stage on the same rank gets its input without a transfer.
    if (action.kind == OpKind::kForward && action.stage + 1 < schedule_.stages &&
        schedule_.rank_of(action.stage + 1) == rank) {
      deliver(data_key(action.stage + 1, action.microbatch, kActivation), rank);
    } else if (produces_input_grad(action.kind) && action.stage > 0 && schedule_.rank_of(action.stage - 1) == rank) {
      deliver(data_key(action.stage - 1, action.microbatch, kGradient), rank);
    }
    advance(rank);
  }

  void issue_transfer(int rank, const Action& send) {
    const bool forward = send.kind == OpKind::kSendForward;
    const int dst_stage = forward ? send.stage + 1 : send.stage - 1;
    const int link_id = (forward ? forward_link_ : backward_link_)[static_cast<std::size_t>(send.stage)];
    if (link_id < 0) {
      throw ScheduleError(fmt::format("rank {}: {} has no peer on another rank", rank, to_string(send)));
    }
    Link& link = links_[static_cast<std::size_t>(link_id)];
    // The message crosses the boundary after the lower of the two stages.
    const std::int64_t bytes = costs_.stages[static_cast<std::size_t>(std::min(send.stage, dst_stage))].send_bytes;
    Transfer transfer{data_key(dst_stage, send.microbatch, forward ? kActivation : kGradient),
                      rank,
                      schedule_.rank_of(dst_stage),
                      send,
                      bytes,
                      now_,
                      now_,
                      link.spec.transfer_time_s(bytes)};
    if (link.busy) {
      link.queue.push_back(transfer);
    } else {
      start_transfer(link_id, transfer);
    }
  }

  // An OFFLOAD goes on the rank's device-to-host link at once; a RELOAD on
  // its host-to-device link once its OFFLOAD has arrived.
  void issue_host_copy(int rank, const Action& copy) {
    if (offload_link_.empty()) {
      throw ScheduleError(fmt::format("rank {}: {} needs a host link, and the topology has none", rank, to_string(copy)));
    }
    const auto index = static_cast<std::size_t>(slot(copy.stage, copy.microbatch));
    if (copy.kind == OpKind::kOffload) {
      reloading_[index] = 1;
      queue_host_copy(rank, copy);
    } else if (is_ready(data_key(copy.stage, copy.microbatch, kOffloaded))) {
      queue_host_copy(rank, copy);
    } else {
      reload_pending_[index] = 1;
    }
  }

  void queue_host_copy(int rank, const Action& copy) {
    const bool offload = copy.kind == OpKind::kOffload;
    const int link_id = (offload ? offload_link_ : reload_link_)[static_cast<std::size_t>(rank)];
    Link& link = links_[static_cast<std::size_t>(link_id)];
    const std::int64_t bytes = costs_.stages[static_cast<std::size_t>(copy.stage)].activation_bytes;
    const Transfer transfer{data_key(copy.stage, copy.microbatch, offload ? kOffloaded : kReloaded),
                            rank,
                            rank,
                            copy,
                            bytes,
                            now_,
                            now_,
                            link.spec.transfer_time_s(bytes)};
    const TransferRecord record{link_id, rank, rank, copy, bytes, now_, now_, now_};
    for (EngineObserver* observer : observers_) observer->on_host_copy_issue(record);
    if (link.busy) {
      link.queue.push_back(transfer);
    } else {
      start_transfer(link_id, transfer);
    }
  }

  void start_transfer(int link_id, Transfer transfer) {
    Link& link = links_[static_cast<std::size_t>(link_id)];
    transfer.start_s = now_;
    link.busy = true;
    link.current = transfer;
    events_.push(now_ + transfer.duration_s, link_id, true);
  }

  void finish_transfer(int link_id) {
    Link& link = links_[static_cast<std::size_t>(link_id)];
    const Transfer done = link.current;
    link.busy = false;
    ++transfers_;
    const TransferRecord record{link_id, done.src_rank, done.dst_rank, done.send, done.bytes,
                                done.issue_s, done.start_s, now_};
    for (EngineObserver* observer : observers_) observer->on_transfer(record);
    if (link.queue_head < link.queue.size()) {
      start_transfer(link_id, link.queue[link.queue_head++]);
      if (link.queue_head == link.queue.size()) {
        link.queue.clear();
        link.queue_head = 0;
      }
    }
    deliver(done.data_key, done.dst_rank);
    // A reload that waited for this offload goes now.
    if (done.send.kind == OpKind::kOffload) {
      const auto index = static_cast<std::size_t>(slot(done.send.stage, done.send.microbatch));
      if (reload_pending_[index]) {
        reload_pending_[index] = 0;
        queue_host_copy(done.src_rank, {done.send.stage, done.send.microbatch, OpKind::kReload, false});
      }
    }
    RankState& sender = ranks_[static_cast<std::size_t>(done.src_rank)];
    if (!is_host_copy(done.send.kind) && sender.waiting_for_send) {
      sender.waiting_for_send = false;
      report_wait(done.src_rank);
      advance(done.src_rank);
    }
  }

  // Marks data as arrived at `rank` and wakes it if it is blocked on it.
  void deliver(std::int64_t key, int rank) {
    ready_[static_cast<std::size_t>(key)] = now_;
    RankState& state = ranks_[static_cast<std::size_t>(rank)];
    if (state.waiting_for != key) return;
    state.waiting_for = kNotWaiting;
    const Action& blocked = schedule_.actions[static_cast<std::size_t>(rank)][state.pc];
    if (is_comm(blocked.kind)) report_wait(rank);
    if (!state.running) advance(rank);
  }

  // Closes a blocking SEND/RECV: the stream was held from wait start to now.
  void report_wait(int rank) {
    RankState& state = ranks_[static_cast<std::size_t>(rank)];
    const CommWaitRecord record{rank, schedule_.actions[static_cast<std::size_t>(rank)][state.pc], state.wait_start_s,
                                now_};
    for (EngineObserver* observer : observers_) observer->on_comm_wait(record);
    ++state.pc;
    ++executed_;
  }

  void check_finished() const {
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      const RankState& state = ranks_[static_cast<std::size_t>(rank)];
      const auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
      if (state.pc < actions.size()) {
        throw ScheduleError(fmt::format("the replay stalled: rank {} waits forever at step {} ({}); run the schedule "
                                        "through validation to see the cycle",
                                        rank, state.pc, to_string(actions[state.pc])));
      }
    }
  }

  const Schedule& schedule_;
  const PipelineCosts& costs_;
  const EngineOptions options_;
  std::span<EngineObserver* const> observers_;

  std::vector<double> durations_;           // [stage][compute kind]
  std::vector<double> ready_;
  std::vector<char> reloading_;       // per (stage, mb): offloaded, its backward waits for the reload
  std::vector<char> reload_pending_;  // per (stage, mb): its RELOAD waits for the OFFLOAD to arrive
  std::vector<int> offload_link_;     // per rank: device to host
  std::vector<int> reload_link_;      // per rank: host to device
  std::vector<RankState> ranks_;
  std::vector<Link> links_;
  std::vector<int> forward_link_;
  std::vector<int> backward_link_;
  EventQueue events_;
  double now_ = 0;
  std::size_t executed_ = 0;
  std::size_t transfers_ = 0;
};

}  // namespace

EngineResult run_engine(const Schedule& lowered, const PipelineCosts& costs, const Topology& topology,
                        const EngineOptions& options, std::span<EngineObserver* const> observers) {
  return Engine(lowered, costs, topology, options, observers).run();
}

}  // namespace pipeplan::sim
