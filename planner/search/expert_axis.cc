#include "planner/search/expert_axis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/error.h"
#include "models/expert_parallel.h"
#include "planner/search/search_space.h"
#include "sim/generators/registry.h"
#include "sim/pass_pairing.h"

namespace pipeplan::planner {

void check_fixed_experts(const PlanRequest& request) {
  const models::ModelConfig& model = request.model;
  if (!model.moe.enabled()) {
    models::TrainingShape shape;
    shape.ep = request.ep.value_or(1);
    shape.etp = request.etp.value_or(request.ep ? 1 : 0);  // an --ep given, even 1, is refused too
    shape.routing.load_imbalance = request.routing.load_imbalance;
    shape.routing.capacity_factor = request.routing.capacity_factor;
    shape.routing.dispatcher = request.routing.dispatcher;
    shape.runtime.moe_a2a_overlap = request.runtime.moe_a2a_overlap;
    models::check_expert_parallel(model, shape);
    return;
  }
  // The shape-free checks, as every candidate's expansion makes them; the
  // imbalance applies to the candidates with ep > 1.
  models::check_routing(model, request.routing.load_imbalance, request.routing.capacity_factor);
  models::TrainingShape shape;
  shape.ep = request.ep.value_or(1);
  if (request.ep) shape.routing.load_imbalance = request.routing.load_imbalance;
  if (request.etp && *request.etp < 1) throw InputError(fmt::format("--etp must be >= 1 (got {})", *request.etp));
  if (shape.ep >= 1 && model.moe.experts % shape.ep != 0) {
    std::vector<int> valid;
    for (int k = 1; k <= model.moe.experts; ++k) {
      if (model.moe.experts % k == 0) valid.push_back(k);
    }
    throw InputError(fmt::format("--ep {} must divide the {} experts of '{}'; use one of {}", shape.ep,
                                 model.moe.experts, model.name, fmt::join(valid, ", ")));
  }
  shape.tp = shape.etp = request.etp.value_or(1);
  shape.dp = shape.ep * shape.etp;
  shape.sequence_parallel = true;
  if (request.runtime.moe_a2a_overlap && request.schedule && !is_schedule_set(*request.schedule)) {
    sim::check_pairs_forward_backward(sim::find_schedule_family(*request.schedule).name,
                                      request.virtual_stages.value_or(0));
  }
  // DeepEP applies where ep > 1; a fixed --ep 1 leaves it nothing to route.
  if (request.ep) shape.routing.dispatcher = request.routing.dispatcher;
  models::check_expert_parallel(model, shape);
  if (request.routing.dispatcher == models::MoeDispatcher::kDeepEp) {
    // A fixed ep as given; else the smallest ep > 1, which any node without NVLink refuses.
    models::TrainingShape probe = shape;
    probe.routing.dispatcher = models::MoeDispatcher::kDeepEp;
    if (!request.ep) {
      probe.ep = 2;
      probe.etp = 1;
    }
    models::check_dispatcher(request.hardware, probe);
  }
  if (request.etp && request.tp && *request.tp % *request.etp != 0) {
    throw InputError(
        fmt::format("--etp {}: the expert tensor-parallel ranks are taken from --tp {}; use an --etp "
                    "dividing it",
                    *request.etp, *request.tp));
  }
}

namespace {

bool deepep_refused(const PlanRequest& request, models::TrainingShape shape, int ep) {
  shape.ep = ep;
  shape.routing.dispatcher = request.routing.dispatcher;
  return models::dispatcher_refusal(request.hardware, shape) != nullptr;
}

}  // namespace

std::vector<ExpertLayout> expert_layouts(const PlanRequest& request, int t, int c, int d,
                                         std::map<std::string, std::size_t>& rejected) {
  const models::ModelConfig& model = request.model;
  if (!model.moe.enabled()) return {{1, 0}};
  const bool dispatched = t == 1 || request.sequence_parallel.value_or(true);
  std::vector<int> etps = request.etp ? std::vector<int>{*request.etp} : std::vector<int>{1};
  if (!request.etp && t > 1) etps.push_back(t);
  std::vector<ExpertLayout> layouts;
  for (int etp : etps) {
    if (t % etp != 0) {
      ++rejected[kEtpNotDividing];
      continue;
    }
    models::TrainingShape shape;
    shape.tp = t;
    shape.cp = c;
    shape.dp = d;
    shape.etp = etp;
    const std::vector<int> sizes = models::expert_parallel_sizes(model, shape);
    const std::vector<int> eps = request.ep ? std::vector<int>{*request.ep} : sizes;
    for (int ep : eps) {
      if (std::find(sizes.begin(), sizes.end(), ep) == sizes.end()) {
        ++rejected[kEpNotFolding];
      } else if (!dispatched && (ep > 1 || etp != t)) {
        ++rejected[kEpWithoutSequenceParallel];
      } else if (deepep_refused(request, shape, ep)) {
        ++rejected[kDeepEpOffNodeWithoutRdma];
      } else {
        layouts.push_back({ep, etp});
      }
    }
  }
  return layouts;
}

}  // namespace pipeplan::planner
