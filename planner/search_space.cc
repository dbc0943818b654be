#include "planner/search_space.h"

#include <fmt/format.h>

#include "common/error.h"
#include "sim/generators/registry.h"

namespace pipeplan::planner {
namespace {

constexpr int kMaxMicroBatchSize = 8;

std::vector<int> divisors_up_to(int value, int limit) {
  std::vector<int> result;
  for (int d = 1; d <= std::min(value, limit); ++d) {
    if (value % d == 0) result.push_back(d);
  }
  return result;
}

// Tensor parallelism stays inside a node and must divide the heads.
std::vector<int> tp_choices(const PlanRequest& request, std::map<std::string, std::size_t>& rejected) {
  std::vector<int> choices;
  // A profile measured one tensor-parallel size; only it is costed.
  const std::optional<int> fixed = request.profile ? std::optional<int>(request.profile->tp) : request.tp;
  const std::vector<int> candidates =
      fixed ? std::vector<int>{*fixed} : divisors_up_to(request.hardware.gpus_per_node, request.gpus);
  for (int t : candidates) {
    const bool divides = request.model.heads % t == 0 && request.model.kv_heads % t == 0 && request.gpus % t == 0;
    const bool in_node = t <= request.hardware.gpus_per_node;
    if (divides && in_node) {
      choices.push_back(t);
    } else {
      ++rejected[divides ? "tensor parallel larger than a node" : "tensor parallel does not divide heads or GPUs"];
    }
  }
  return choices;
}

}  // namespace

SearchSpace::SearchSpace(const PlanRequest& request) {
  if (request.gpus < 1) throw InputError(fmt::format("--gpus must be >= 1 (got {})", request.gpus));
  if (request.global_batch < 1) throw InputError(fmt::format("--global-batch must be >= 1 (got {})", request.global_batch));
  const int layers = request.model.layers;
  for (int t : tp_choices(request, rejected_)) {
    const std::vector<int> pps = request.pp ? std::vector<int>{*request.pp} : divisors_up_to(request.gpus / t, layers);
    for (int p : pps) {
      if ((request.gpus / t) % p != 0 || p > layers) {
        ++rejected_["pipeline size does not divide the GPUs or exceeds the layers"];
        continue;
      }
      const int d = request.gpus / (t * p);
      if (request.global_batch % d != 0) {
        ++rejected_["global batch not divisible by the data-parallel size"];
        continue;
      }
      const int per_replica = request.global_batch / d;
      const std::vector<int> sizes = request.micro_batch_size ? std::vector<int>{*request.micro_batch_size}
                                                              : divisors_up_to(per_replica, kMaxMicroBatchSize);
      for (int b : sizes) {
        if (per_replica % b != 0) {
          ++rejected_["micro-batch size does not divide the batch per replica"];
          continue;
        }
        groups_.push_back({t, p, d, b, per_replica / b});
      }
    }
  }
  if (groups_.empty()) {
    throw InputError(fmt::format(
        "no tensor x pipeline x data layout divides {} GPUs with a global batch of {} (and the fixed choices): pick "
        "a GPU count and batch with common factors, or relax --tp/--pp/--micro-batch-size",
        request.gpus, request.global_batch));
  }
}

std::vector<ScheduleChoice> schedule_choices(const PlanRequest& request) {
  auto with_virtual = [&](const std::string& name, std::vector<int> defaults) {
    std::vector<ScheduleChoice> choices;
    if (request.virtual_stages) defaults = {*request.virtual_stages};
    for (int v : defaults) choices.push_back({name, v});
    return choices;
  };
  if (request.schedule) {
    const sim::ScheduleFamily& family = sim::find_schedule_family(*request.schedule);
    const std::string name(family.name);
    if (name == "Interleaved1F1B" || name == "LoopedBFS" || name == "InterleavedZeroBubble") {
      return with_virtual(name, {2, 3, 4});
    }
    return with_virtual(name, {family.default_virtual_stages});
  }
  std::vector<ScheduleChoice> choices{{"GPipe", 1}, {"1F1B", 1}};
  for (const ScheduleChoice& choice : with_virtual("Interleaved1F1B", {2, 3, 4})) choices.push_back(choice);
  for (const char* name : {"ZBH1", "ZBH2"}) choices.push_back({name, 1});
  choices.push_back({"ZBVZeroBubble", 2});
  choices.push_back({"DualPipeV", 2});
  return choices;
}

std::vector<models::Recompute> recompute_choices(const PlanRequest& request) {
  // A profile measures passes without recomputation (apply_profile refuses
  // the others), so measured costs are searched without it.
  if (request.profile && !request.recompute) return {models::Recompute::kNone};
  if (request.recompute) return {*request.recompute};
  return {models::Recompute::kNone, models::Recompute::kSelective, models::Recompute::kFull};
}

}  // namespace pipeplan::planner
