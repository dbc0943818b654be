#include "sim/pass_pairing.h"

#include <fmt/format.h>

#include <vector>

#include "common/error.h"
#include "sim/action_index.h"
#include "sim/dependency_graph.h"

namespace pipeplan::sim {
namespace {

struct Pairing {
  int rank = 0;
  std::size_t position = 0;  // of the pair's forward
};

}  // namespace

bool pairs_forward_backward(std::string_view family, int virtual_stages) {
  return family == "Interleaved1F1B" && virtual_stages >= 2;
}

void check_pairs_forward_backward(std::string_view family, int virtual_stages) {
  if (pairs_forward_backward(family, virtual_stages == 0 ? 2 : virtual_stages)) return;
  throw InputError(
      fmt::format("--moe-a2a-overlap pairs the steady state of Interleaved1F1B with 2 or more stages per "
                  "rank (as Megatron-LM runs it), not {}{}; drop it or use Interleaved1F1B with "
                  "--virtual 2 or more (DualPipeV pairs its own passes)",
                  family, virtual_stages > 0 ? fmt::format(" with v = {}", virtual_stages) : ""));
}

void pair_forward_backward(Schedule& schedule) {
  std::vector<Pairing> made;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    auto& actions = schedule.actions[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i + 1 < actions.size(); ++i) {
      if (actions[i].overlapped) {  // a pair already (DualPipeV's)
        ++i;
        continue;
      }
      Action& forward = actions[i];
      const Action& next = actions[i + 1];
      // One micro-batch's F and B depend on each other: never a pair.
      if (forward.kind != OpKind::kForward || !produces_input_grad(next.kind) ||
          forward.microbatch == next.microbatch) {
        continue;
      }
      forward.overlapped = true;
      made.push_back({rank, i});
      ++i;
    }
  }
  // Around the warm-up's end a pair can wait on itself through the next rank
  // (its backward's input comes from a pair there that needs its forward's
  // output): undo a pair on each such cycle until none is left.
  for (;;) {
    const ActionIndex index(schedule);
    const std::vector<std::uint32_t> cycle =
        find_cycle(build_dependency_graph(schedule, index, CommSemantics::kOverlap));
    if (cycle.empty()) return;
    bool undone = false;
    for (std::uint32_t vertex : cycle) {
      const int rank = index.rank_of_vertex(vertex);
      const std::size_t position = index.position_of_vertex(vertex);
      for (const Pairing& pair : made) {
        Action& forward = schedule.actions[static_cast<std::size_t>(rank)][pair.position];
        if (pair.rank == rank && (pair.position == position || pair.position + 1 == position) && forward.overlapped) {
          forward.overlapped = false;
          undone = true;
          break;
        }
      }
      if (undone) break;
    }
    if (!undone) return;  // a cycle no pair of ours made: the schedule's own, for validation to report
  }
}

}  // namespace pipeplan::sim
