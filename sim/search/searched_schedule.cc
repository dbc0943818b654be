#include "sim/search/searched_schedule.h"

#include <fmt/format.h>

#include "common/error.h"

namespace pipeplan::sim {

Schedule searched_schedule_shape(const std::string& name, int ranks, int microbatches) {
  if (ranks < 1) throw InputError(fmt::format("--pp must be >= 1 (got {})", ranks));
  if (microbatches < 1) throw InputError(fmt::format("--microbatches must be >= 1 (got {})", microbatches));
  Schedule schedule;
  schedule.name = name;
  schedule.ranks = ranks;
  schedule.stages = ranks;
  schedule.microbatches = microbatches;
  schedule.stage_to_rank = stage_to_rank_mapping(ranks, 1, StagePlacement::kLoop);
  schedule.actions.resize(static_cast<std::size_t>(ranks));
  return schedule;
}

std::vector<std::int64_t> activation_limits(const ActivationLimit& limit, const PipelineCosts& costs) {
  std::vector<std::int64_t> limits;
  const int ranks = static_cast<int>(costs.stages.size());
  for (const StageCost& stage : costs.stages) {
    if (stage.activation_bytes <= 0) {
      throw InputError(
          "a searched schedule keeps each rank within an activation limit, and these costs keep no activations: "
          "give --act-bytes (M_B per micro-batch per rank; --wgrad-bytes for M_W, default 0)");
    }
    limits.push_back(limit.bytes(ranks, stage.activation_bytes));
  }
  return limits;
}

std::vector<std::int64_t> limits_under_cap(std::int64_t cap, const PipelineCosts& costs) {
  std::vector<std::int64_t> limits;
  for (std::size_t rank = 0; rank < costs.stages.size(); ++rank) {
    const std::int64_t held = rank < costs.static_bytes.size() ? costs.static_bytes[rank] : 0;
    limits.push_back(cap - held);
  }
  return limits;
}

}  // namespace pipeplan::sim
