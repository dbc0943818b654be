#include "sim/generators/support.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

#include "common/error.h"

namespace pipeplan::sim {

Schedule make_schedule(std::string name, const PipelineShape& shape, StagePlacement placement) {
  Schedule schedule;
  schedule.name = std::move(name);
  schedule.ranks = shape.ranks;
  schedule.stages = shape.ranks * shape.virtual_stages;
  schedule.microbatches = shape.microbatches;
  schedule.stage_to_rank = stage_to_rank_mapping(shape.ranks, shape.virtual_stages, placement);
  schedule.actions.resize(static_cast<std::size_t>(shape.ranks));
  return schedule;
}

void require_virtual_stages(const PipelineShape& shape, std::string_view schedule, int expected) {
  if (shape.virtual_stages == expected) return;
  throw InputError(fmt::format("{} places exactly {} stage(s) on each rank but --virtual is {}; "
                               "set --virtual {} or leave it out",
                               schedule, expected, shape.virtual_stages, expected));
}

std::vector<Action> expand_one_f_one_b(const OneFOneBOrder& order) {
  const int count = static_cast<int>(order.forwards.size());
  const int warmup = std::clamp(order.warmup, 0, count);
  std::vector<Action> actions;
  actions.reserve(static_cast<std::size_t>(count) * (order.split_backward ? 3 : 2));
  std::deque<Action> pending_weights;

  auto emit_backward = [&](int index) {
    Action backward = order.backwards[static_cast<std::size_t>(index)];
    if (!order.split_backward) {
      backward.kind = OpKind::kBackward;
      actions.push_back(backward);
      return;
    }
    backward.kind = OpKind::kBackwardInput;
    actions.push_back(backward);
    pending_weights.push_back({backward.stage, backward.microbatch, OpKind::kBackwardWeight});
    if (index >= order.weight_delay) {
      actions.push_back(pending_weights.front());
      pending_weights.pop_front();
    }
  };

  for (int k = 0; k < warmup; ++k) actions.push_back(order.forwards[static_cast<std::size_t>(k)]);
  for (int k = 0; k < count - warmup; ++k) {
    actions.push_back(order.forwards[static_cast<std::size_t>(warmup + k)]);
    emit_backward(k);
  }
  for (int k = count - warmup; k < count; ++k) emit_backward(k);
  actions.insert(actions.end(), pending_weights.begin(), pending_weights.end());
  return actions;
}

InterleavedTables interleaved_tables(int rank, int ranks, int microbatches, int virtual_stages,
                                     int group_size) {
  InterleavedTables tables;
  const std::size_t total = static_cast<std::size_t>(microbatches) * static_cast<std::size_t>(virtual_stages);
  tables.forwards.reserve(total);
  tables.backwards.reserve(total);
  for (int first = 0; first < microbatches; first += group_size) {
    // Megatron's last group takes every remaining micro-batch.
    const int last = first + group_size >= microbatches ? microbatches : first + group_size;
    for (int chunk = 0; chunk < virtual_stages; ++chunk) {
      for (int mb = first; mb < last; ++mb) {
        tables.forwards.push_back({chunk * ranks + rank, mb, OpKind::kForward});
        tables.backwards.push_back({(virtual_stages - 1 - chunk) * ranks + rank, mb, OpKind::kBackward});
      }
    }
  }
  return tables;
}

}  // namespace pipeplan::sim
