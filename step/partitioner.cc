#include "step/partitioner.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "step/min_max_dp.h"

namespace pipeplan::step {

PartitionMethod parse_partition_method(std::string_view text) {
  if (text == "uniform") return PartitionMethod::kUniform;
  if (text == "parameters") return PartitionMethod::kParameters;
  if (text == "time") return PartitionMethod::kTime;
  if (text == "memory") return PartitionMethod::kMemory;
  throw InputError(fmt::format("--partition '{}': use uniform, parameters, time or memory", text));
}

std::string_view partition_method_name(PartitionMethod method) {
  switch (method) {
    case PartitionMethod::kUniform: return "uniform";
    case PartitionMethod::kParameters: return "parameters";
    case PartitionMethod::kTime: return "time";
    case PartitionMethod::kMemory: return "memory";
  }
  return "?";
}

std::optional<StageSplit> min_max_partition(const PartitionProblem& problem) {
  if (problem.fits) return min_max_split(problem.layers, problem.stages, problem.cost, problem.fits);
  return min_max_split(problem.layers, problem.stages, problem.cost, [](int, int, int) { return true; });
}

std::optional<StageSplit> memory_aware_partition(int layers, int stages,
                                                 const std::function<double(int i, int j)>& time,
                                                 const std::function<double(int stage, int i, int j)>& memory,
                                                 double cap, double time_slack) {
  return memory_aware_split(
      layers, stages, [&](int, int i, int j) { return time(i, j); }, memory, cap, time_slack);
}

StageSplit uniform_split(int transformer_layers, int stages) {
  if (stages < 1 || stages > transformer_layers) {
    throw InputError(fmt::format("cannot split {} transformer layers over {} stages", transformer_layers, stages));
  }
  std::vector<int> counts(static_cast<std::size_t>(stages), transformer_layers / stages);
  for (int stage = 0; stage < transformer_layers % stages; ++stage) ++counts[static_cast<std::size_t>(stage)];
  return split_from_counts(counts, transformer_layers);
}

}  // namespace pipeplan::step
