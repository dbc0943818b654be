#include "models/expert_parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>

#include "common/error.h"
#include "models/time_model.h"

namespace pipeplan::models {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> result;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) result.push_back(k);
  }
  return result;
}

}  // namespace

std::vector<int> expert_parallel_sizes(const ModelConfig& model, const TrainingShape& shape) {
  if (!model.moe.enabled()) return {1};
  const int folded = shape.tp * shape.cp * shape.dp;
  std::vector<int> sizes;
  for (int ep : divisors(model.moe.experts)) {
    if (folded % (ep * shape.expert_tp()) == 0) sizes.push_back(ep);
  }
  return sizes;
}

double busiest_rank_load(const MoeConfig& moe, int ep, double tokens, double skew, double capacity_factor) {
  double load = skew;
  if (ep > 1 && tokens > 0 && moe.experts > moe.top_k) {
    // Each token's top-k copies fall on the busiest rank's share p of the
    // experts as a draw without replacement (hypergeometric): mean k p and
    // variance k p (1 - p) (E - k) / (E - 1). Tokens draw independently.
    const double share = std::min(1.0, skew / ep);
    const double k = moe.top_k, experts = moe.experts;
    const double mean = tokens * k * share;
    const double variance = tokens * k * share * (1 - share) * (experts - k) / (experts - 1);
    // Every expert-parallel rank waits for the busiest at the combine: the
    // expected largest of ep loads with a fixed sum (correlation -1/(ep - 1),
    // so sd / sqrt(1 - 1/ep) times the largest of ep normal scores, by
    // Blom's 1958 approximation).
    const double spread = std::sqrt(variance / (1 - 1.0 / ep));
    const double n = ep;
    const double z = boost::math::quantile(boost::math::normal(), (n - 0.375) / (n + 0.25));
    load = skew * (1 + z * spread / mean);
  }
  return capacity_factor > 0 ? std::min(load, capacity_factor) : load;
}

void check_routing(const ModelConfig& model, double load_imbalance, double capacity_factor) {
  // The busiest rank gets at most every token once per expert it holds.
  const double most = static_cast<double>(model.moe.experts) / std::max(1, model.moe.top_k);
  if (!(load_imbalance >= 1 && load_imbalance <= most)) {
    throw InputError(
        fmt::format("--moe-load-imbalance must be between 1 (balanced) and {} (experts / top-k: "
                    "every token on the busiest rank), got {}",
                    most, load_imbalance));
  }
  if (!(capacity_factor >= 0 && std::isfinite(capacity_factor))) {
    throw InputError(
        fmt::format("--moe-capacity-factor must be > 0 (or 0: no token dropping), got {}", capacity_factor));
  }
}

void check_expert_parallel(const ModelConfig& model, const TrainingShape& shape) {
  const int etp = shape.expert_tp();
  if (!model.moe.enabled()) {
    if (shape.ep != 1 || shape.etp != 0) {
      throw InputError(
          fmt::format("--ep / --etp: '{}' is a dense model (no experts to divide); drop them", model.name));
    }
    if (shape.routing.load_imbalance != 1.0 || shape.routing.capacity_factor != 0 ||
        shape.routing.dispatcher != MoeDispatcher::kAllToAll || shape.runtime.moe_a2a_overlap) {
      throw InputError(
          fmt::format("--moe-load-imbalance / --moe-capacity-factor / --moe-dispatcher / "
                      "--moe-a2a-overlap: '{}' is a dense model (no experts to route to); drop them",
                      model.name));
    }
    return;
  }
  const int experts = model.moe.experts;
  if (shape.ep < 1) throw InputError(fmt::format("--ep must be >= 1 (got {})", shape.ep));
  if (shape.etp < 0) throw InputError(fmt::format("--etp must be >= 1 (got {})", shape.etp));
  if (shape.tp % etp != 0) {
    throw InputError(
        fmt::format("--etp {}: the expert tensor-parallel ranks are taken from the attention's t = {}; "
                    "use one of {}",
                    etp, shape.tp, fmt::join(divisors(shape.tp), ", ")));
  }
  if (experts % shape.ep != 0) {
    throw InputError(fmt::format("--ep {} must divide the {} experts of '{}'; use one of {}", shape.ep, experts,
                                 model.name, fmt::join(expert_parallel_sizes(model, shape), ", ")));
  }
  const int folded = shape.tp * shape.cp * shape.dp;
  if (folded % (shape.ep * etp) != 0) {
    throw InputError(fmt::format(
        "--ep {} x --etp {} = {} must divide t x c x d = {} (MoE parallel folding: each pipeline stage's t x c x d "
        "ranks fold into etp x ep x expert-data-parallel ranks); use --ep one of {}",
        shape.ep, etp, shape.ep * etp, folded, fmt::join(expert_parallel_sizes(model, shape), ", ")));
  }
  if (shape.tp > 1 && !shape.sequence_parallel && (shape.ep > 1 || etp != shape.tp)) {
    throw InputError(
        fmt::format("--ep {} --etp {} with --tp {}: the all-to-all token dispatcher routes each "
                    "rank's own tokens, which needs --sequence-parallel (as Megatron-LM asserts)",
                    shape.ep, etp, shape.tp));
  }
  if (shape.zero >= ZeroStage::kGradients && shape.ep * etp != shape.tp) {
    throw InputError(
        fmt::format("--zero {} shards over the d x c weight replicas, but with --ep {} --etp {} the "
                    "experts have {} replicas of their own: use --zero 0 or 1 (Megatron's distributed "
                    "optimizer shards each group over its own replicas)",
                    static_cast<int>(shape.zero), shape.ep, etp, shape.expert_replicas()));
  }
  if (shape.routing.dispatcher == MoeDispatcher::kDeepEp && shape.ep == 1) {
    throw InputError(
        "--moe-dispatcher deepep routes tokens between the ranks of the expert-parallel group: with "
        "--ep 1 there is none; drop it or raise --ep");
  }
  check_routing(model, shape.routing.load_imbalance, shape.routing.capacity_factor);
  if (shape.routing.load_imbalance != 1.0 && shape.ep == 1) {
    throw InputError(
        "--moe-load-imbalance is the busiest expert-parallel rank's share: with --ep 1 every rank runs "
        "every expert on its own tokens; drop it or raise --ep");
  }
  // A rank holding experts / ep experts gets at most min(top-k, experts /
  // ep) of each token's copies, against top-k / ep on average.
  if (shape.routing.load_imbalance > shape.ep) {
    throw InputError(
        fmt::format("--moe-load-imbalance {} is over what --ep {} allows: the busiest of {} ranks gets at most "
                    "{} x the average (every token's copies that its experts can take); give at most {} or raise --ep",
                    shape.routing.load_imbalance, shape.ep, shape.ep, shape.ep, shape.ep));
  }
}

const char* dispatcher_refusal(const HardwareConfig& hardware, const TrainingShape& shape) {
  if (shape.routing.dispatcher != MoeDispatcher::kDeepEp || shape.ep <= 1) return nullptr;
  if (!hardware.node_nvlink) return "its node has no NVLink (node.nvlink: false)";
  const long long span = static_cast<long long>(shape.ep) * shape.expert_tp();
  if (!hardware.network_rdma && !on_node_link(hardware, span)) {
    return "the expert-parallel group leaves the node and the network has no RDMA (network.rdma: false)";
  }
  return nullptr;
}

void check_dispatcher(const HardwareConfig& hardware, const TrainingShape& shape) {
  if (const char* reason = dispatcher_refusal(hardware, shape)) {
    const std::string within =
        hardware.node_nvlink ? fmt::format(", or ep x etp within {} GPUs", hardware.local_gpus()) : "";
    throw InputError(fmt::format("--moe-dispatcher deepep on {}: {}; use --moe-dispatcher alltoall{}", hardware.name,
                                 reason, within));
  }
}

}  // namespace pipeplan::models
