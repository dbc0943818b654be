#include "sim/validation.h"

#include <fmt/format.h>

#include "common/error.h"
#include "sim/dependency_graph.h"
#include "sim/step_grid.h"

namespace pipeplan::sim {
namespace {

constexpr std::uint32_t kAbsent = ActionIndex::kAbsent;

class Validator {
 public:
  Validator(const Schedule& schedule, const ActionIndex& index) : schedule_(schedule), index_(index) {}

  void check_compute() const {
    for (int stage = 0; stage < schedule_.stages; ++stage) {
      for (int mb = 0; mb < schedule_.microbatches; ++mb) check_compute(stage, mb);
    }
  }

  void check_comm() const {
    for (int stage = 0; stage < schedule_.stages; ++stage) {
      for (int mb = 0; mb < schedule_.microbatches; ++mb) {
        check_boundary(stage, stage + 1, mb);
        check_boundary(stage, stage - 1, mb);
      }
    }
    // RECVs from a stage past either end, which no boundary above covers.
    for (int mb = 0; mb < schedule_.microbatches; ++mb) {
      check_no_recv_from_outside(0, mb, OpKind::kRecvForward);
      check_no_recv_from_outside(schedule_.stages - 1, mb, OpKind::kRecvBackward);
    }
  }

  void check_deadlock() const {
    const DependencyGraph graph = build_dependency_graph(schedule_, index_, CommSemantics::kBlocking);
    const std::vector<std::uint32_t> cycle = find_cycle(graph);
    if (cycle.empty()) return;
    // The marked cells: each rank's first action that can never run.
    const StepLayout layout = unit_step_layout(schedule_, index_, graph);
    std::vector<std::uint32_t> stuck;
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      const auto& steps = layout.step[static_cast<std::size_t>(rank)];
      for (std::size_t position = 0; position < steps.size(); ++position) {
        if (steps[position] < 0) {
          stuck.push_back(index_.vertex(rank, position));
          break;
        }
      }
    }
    std::string cycle_text;
    for (std::uint32_t vertex : cycle) {
      cycle_text += fmt::format("{}@rank{} -> ", to_string(index_.action_of_vertex(vertex)),
                                index_.rank_of_vertex(vertex));
    }
    cycle_text += to_string(index_.action_of_vertex(cycle.front()));
    throw ScheduleError(
        fmt::format("the schedule deadlocks: {} waits on a cycle ({}); reorder the actions so that each one's "
                    "input is produced earlier",
                    index_.describe(stuck.empty() ? cycle.front() : stuck.front()), cycle_text),
        render_step_grid(schedule_, index_, layout, stuck));
  }

 private:
  [[noreturn]] void fail(std::uint32_t vertex, const std::string& message) const {
    throw ScheduleError(fmt::format("{}: {}", index_.describe(vertex), message));
  }
  [[noreturn]] void fail_missing(int stage, int mb, OpKind kind, const std::string& hint) const {
    const Action missing{stage, mb, kind};
    throw ScheduleError(fmt::format("rank {} never runs {} (stage {}, micro-batch {}): {}", schedule_.rank_of(stage),
                                    to_string(missing), stage, mb, hint));
  }

  void check_compute(int stage, int mb) const {
    const std::uint32_t forward = index_.find(stage, mb, OpKind::kForward);
    const std::uint32_t full = index_.find(stage, mb, OpKind::kBackward);
    const std::uint32_t input = index_.find(stage, mb, OpKind::kBackwardInput);
    const std::uint32_t weight = index_.find(stage, mb, OpKind::kBackwardWeight);
    if (forward == kAbsent) fail_missing(stage, mb, OpKind::kForward, "every micro-batch needs a forward per stage");
    if (full != kAbsent && (input != kAbsent || weight != kAbsent)) {
      fail(full, "a full backward B and a split backward (I/W) of the same micro-batch; keep one of them");
    }
    if (full == kAbsent && input == kAbsent) {
      fail_missing(stage, mb, OpKind::kBackward, "every micro-batch needs a backward (B, or I then W) per stage");
    }
    if (full == kAbsent && weight == kAbsent) {
      fail_missing(stage, mb, OpKind::kBackwardWeight, "an input-gradient backward I needs its weight-gradient W");
    }
    if (full == kAbsent && input == kAbsent) return;
    const std::uint32_t backward = full != kAbsent ? full : input;
    if (backward < forward) fail(backward, fmt::format("runs before its forward ({})", index_.describe(forward)));
    if (weight != kAbsent && input == kAbsent) {
      fail(weight, "a weight-gradient W without its input-gradient I");
    }
    if (weight != kAbsent && weight < input) {
      fail(weight, fmt::format("runs before its input-gradient backward ({})", index_.describe(input)));
    }
  }

  // The messages between `from` and its neighbour `to` (stage index) for mb.
  void check_boundary(int from, int to, int mb) const {
    const bool forward = to > from;
    const OpKind send_kind = forward ? OpKind::kSendForward : OpKind::kSendBackward;
    const OpKind recv_kind = forward ? OpKind::kRecvForward : OpKind::kRecvBackward;
    const std::uint32_t send = index_.find(from, mb, send_kind);
    const bool exists = to >= 0 && to < schedule_.stages;
    const bool crosses = exists && schedule_.rank_of(from) != schedule_.rank_of(to);
    const std::uint32_t recv = exists ? index_.find(to, mb, recv_kind) : kAbsent;
    if (!crosses) {
      if (send != kAbsent) fail(send, "sends to a stage on the same rank or past the pipeline's end; remove it");
      if (recv != kAbsent) fail(recv, "receives from a stage on the same rank; remove it");
      return;
    }
    const char* what = forward ? "activation" : "input gradient";
    if (send == kAbsent) {
      fail_missing(from, mb, send_kind,
                   fmt::format("stage {} needs the {} from stage {} on another rank", to, what, from));
    }
    if (recv == kAbsent) {
      fail_missing(to, mb, recv_kind, fmt::format("the {} from stage {} on another rank is never received", what, from));
    }
    const std::uint32_t producer = forward ? index_.find(from, mb, OpKind::kForward) : backward_of(from, mb);
    const std::uint32_t consumer = forward ? index_.find(to, mb, OpKind::kForward) : backward_of(to, mb);
    if (send < producer) fail(send, fmt::format("sends before its data is computed ({})", index_.describe(producer)));
    if (recv > consumer) fail(recv, fmt::format("receives after its data is needed ({})", index_.describe(consumer)));
  }

  void check_no_recv_from_outside(int stage, int mb, OpKind recv_kind) const {
    const std::uint32_t recv = index_.find(stage, mb, recv_kind);
    if (recv != kAbsent) fail(recv, "receives from a stage past the pipeline's end; remove it");
  }

  std::uint32_t backward_of(int stage, int mb) const {
    const std::uint32_t full = index_.find(stage, mb, OpKind::kBackward);
    return full != kAbsent ? full : index_.find(stage, mb, OpKind::kBackwardInput);
  }

  const Schedule& schedule_;
  const ActionIndex& index_;
};

}  // namespace

ActionIndex validate_structure(const Schedule& schedule) {
  ActionIndex index(schedule);
  Validator validator(schedule, index);
  validator.check_compute();
  if (schedule.has_comm()) validator.check_comm();
  return index;
}

ActionIndex validate_schedule(const Schedule& schedule) {
  ActionIndex index = validate_structure(schedule);
  Validator(schedule, index).check_deadlock();
  return index;
}

}  // namespace pipeplan::sim
