#include "planner/search/search_space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/error.h"
#include "models/model_limits.h"
#include "models/time_model.h"
#include "planner/search/expert_axis.h"
#include "planner/search/framework_axis.h"
#include "sim/generators/registry.h"
#include "sim/pass_pairing.h"
#include "step/zero_support.h"

namespace pipeplan::planner {
namespace {

std::vector<int> divisors_up_to(int value, int limit) {
  std::vector<int> result;
  for (int d = 1; d <= std::min(value, limit); ++d) {
    if (value % d == 0) result.push_back(d);
  }
  return result;
}

// Tensor-parallel sizes that divide the heads, the key-value heads and the
// GPUs and whose groups each stay within an NVLink domain (a node's GPUs,
// or an NVL72 rack's).
bool tp_fits(const PlanRequest& request, int t) {
  return request.model.heads % t == 0 && request.model.kv_heads % t == 0 && request.gpus % t == 0 &&
         models::on_node_link(request.hardware, t);
}

// A fixed tensor-parallel size that cannot work, named with why.
void check_fixed_tp(const PlanRequest& request, int t, const char* option) {
  const models::ModelConfig& model = request.model;
  if (t < 1) throw InputError(fmt::format("{} must be >= 1 (got {})", option, t));
  const int local = request.hardware.local_gpus();
  // Too large for a domain at all: said before the heads, which it may divide.
  if (t > local) models::check_tp_domain(request.hardware, t, option, request.allow_cross_node_tp);
  if (model.heads % t != 0 || model.kv_heads % t != 0) {
    std::vector<int> valid;
    for (int d : divisors_up_to(model.kv_heads, local)) {
      if (model.heads % d == 0) valid.push_back(d);
    }
    throw InputError(fmt::format("{} {} must divide {}'s {} attention heads and {} key-value heads; use one of {}",
                                 option, t, model.name, model.heads, model.kv_heads, fmt::join(valid, ", ")));
  }
  if (request.gpus % t != 0) throw InputError(fmt::format("{} {} does not divide --gpus {}", option, t, request.gpus));
  models::check_tp_domain(request.hardware, t, option, request.allow_cross_node_tp);
}

// Whether Megatron's other rank order (tp-pp-dp) can cost differently from
// its default: it takes c = 1 and no experts, and moves stages and
// replicas only where both exist and some group leaves the NVLink domain.
bool pipeline_first_differs(const PlanRequest& request, const SearchGroup& group) {
  return group.cp == 1 && !request.model.moe.enabled() && group.pp > 1 && group.dp > 1 &&
         !models::on_node_link(request.hardware, static_cast<long long>(group.tp) * group.pp * group.dp);
}

// Context-parallel sizes the sequence divides into two chunks per rank
// (causal load balance), among the divisors of `gpus`.
bool cp_fits(const PlanRequest& request, int c) { return c == 1 || request.seq_len % (2 * c) == 0; }

void check_fixed_cp(const PlanRequest& request, int c) {
  if (c < 1) throw InputError(fmt::format("--cp must be >= 1 (got {})", c));
  if (request.gpus % c != 0) throw InputError(fmt::format("--cp {} does not divide --gpus {}", c, request.gpus));
  if (!cp_fits(request, c)) {
    std::vector<int> valid;
    for (int d : divisors_up_to(request.gpus, request.gpus)) {
      if (cp_fits(request, d)) valid.push_back(d);
    }
    throw InputError(fmt::format("--cp {}: the sequence ({}) must divide into 2 x cp = {} chunks (two per rank, for "
                                 "causal load balance); use one of {}",
                                 c, request.seq_len, 2 * c, fmt::join(valid, ", ")));
  }
}

void check_fixed_choices(const PlanRequest& request) {
  if (request.gpus < 1) throw InputError(fmt::format("--gpus must be >= 1 (got {})", request.gpus));
  if (request.global_batch < 1) {
    throw InputError(fmt::format("--global-batch must be >= 1 (got {})", request.global_batch));
  }
  if (request.gpus > models::kMaxGpus) {
    throw InputError(fmt::format("--gpus {} is more than the {} any job has; give at most that", request.gpus,
                                 models::kMaxGpus));
  }
  if (request.global_batch > kMostGlobalBatch) {
    throw InputError(fmt::format("--global-batch {} is more than the {} sequences the search plans (its work grows "
                                 "with the micro-batches per replica); give at most that",
                                 request.global_batch, kMostGlobalBatch));
  }
  const int max_gpus = request.hardware.nodes * request.hardware.gpus_per_node;
  if (request.hardware.nodes > 0 && request.gpus > max_gpus) {
    throw InputError(fmt::format("--gpus {} exceeds {}'s {} GPUs ({} nodes of {})", request.gpus,
                                 request.hardware.name, max_gpus, request.hardware.nodes,
                                 request.hardware.gpus_per_node));
  }
  if (request.tp) check_fixed_tp(request, *request.tp, "--tp");
  if (request.rank_order.value_or(false) && (request.model.moe.enabled() || request.cp.value_or(1) > 1)) {
    throw InputError("--rank-order tp-pp-dp (Megatron's --use-tp-pp-dp-mapping) takes --cp 1 and a model without "
                     "experts, as Megatron asserts; drop it or use tp-cp-ep-dp-pp");
  }
  if (request.pp) {
    const int p = *request.pp;
    if (p < 1) throw InputError(fmt::format("--pp must be >= 1 (got {})", p));
    if (p > request.model.layers) {
      throw InputError(fmt::format("--pp {} exceeds {}'s {} transformer layers: every stage needs one; use --pp {} "
                                   "or less",
                                   p, request.model.name, request.model.layers, request.model.layers));
    }
    if (request.gpus % p != 0) throw InputError(fmt::format("--pp {} does not divide --gpus {}", p, request.gpus));
  }
  if (request.dp) {
    const int d = *request.dp;
    if (d < 1) throw InputError(fmt::format("--dp must be >= 1 (got {})", d));
    if (request.gpus % d != 0) throw InputError(fmt::format("--dp {} does not divide --gpus {}", d, request.gpus));
    if (request.global_batch % d != 0) {
      throw InputError(fmt::format("--dp {} does not divide --global-batch {}: each replica takes an equal share", d,
                                   request.global_batch));
    }
  }
  if (request.cp) check_fixed_cp(request, *request.cp);
  const long long fixed = static_cast<long long>(request.tp.value_or(1)) * request.cp.value_or(1) *
                          request.pp.value_or(1) * request.dp.value_or(1);
  if (request.gpus % fixed != 0) {
    // Only the sizes given: each divides --gpus alone (checked above).
    std::vector<std::string> given;
    for (const auto& [name, size] : {std::pair{"--tp", request.tp}, std::pair{"--cp", request.cp},
                                     std::pair{"--pp", request.pp}, std::pair{"--dp", request.dp}}) {
      if (size) given.push_back(fmt::format("{} {}", name, *size));
    }
    throw InputError(fmt::format("{} = {} GPUs, which does not divide --gpus {}", fmt::join(given, " x "), fixed,
                                 request.gpus));
  }
  if (request.tp && request.cp && request.pp && request.dp && fixed != request.gpus) {
    throw InputError(fmt::format("--tp x --cp x --pp x --dp = {} but --gpus is {}", fixed, request.gpus));
  }
  if (request.pp && request.virtual_stages && *request.pp * *request.virtual_stages > request.model.layers) {
    throw InputError(fmt::format("--virtual {} with --pp {} makes {} pipeline stages, more than {}'s {} transformer "
                                 "layers: every stage needs one; use --virtual {} or less",
                                 *request.virtual_stages, *request.pp, *request.pp * *request.virtual_stages,
                                 request.model.name, request.model.layers,
                                 std::max(1, request.model.layers / *request.pp)));
  }
  if (request.micro_batch_size && *request.micro_batch_size < 1) {
    throw InputError(fmt::format("--micro-batch-size must be >= 1 (got {})", *request.micro_batch_size));
  }
  if (request.zero && request.pp && request.schedule && !is_schedule_set(*request.schedule))
    step::check_zero_pipeline(*request.zero, *request.pp, *request.schedule);
  check_fixed_experts(request);
  check_framework_choices(request);
}

// Why no group was left: the fixed micro-batch size, or the combination.
[[noreturn]] void explain_no_layout(const PlanRequest& request, const std::vector<int>& replica_batches,
                                    const std::map<std::string, std::size_t>& rejected) {
  if (request.micro_batch_size && !replica_batches.empty()) {
    throw InputError(fmt::format("--micro-batch-size {} divides no batch per replica: --global-batch {} over the "
                                 "data-parallel sizes left gives {} sequences per replica",
                                 *request.micro_batch_size, request.global_batch, fmt::join(replica_batches, ", ")));
  }
  // The expert axis's own reasons, when it left nothing.
  std::vector<std::string> experts;
  for (const char* reason : {kEpNotFolding, kEtpNotDividing, kEpWithoutSequenceParallel}) {
    if (const auto found = rejected.find(reason); found != rejected.end()) {
      experts.push_back(fmt::format("{} ({})", reason, found->second));
    }
  }
  throw InputError(fmt::format(
      "no tensor x pipeline x data layout divides {} GPUs with a global batch of {} (and the fixed choices){}: pick "
      "a GPU count and batch with common factors, or relax --tp/--pp/--dp/--micro-batch-size (and --ep/--etp)",
      request.gpus, request.global_batch,
      experts.empty() ? "" : fmt::format("; expert layouts left out: {}", fmt::join(experts, ", "))));
}

}  // namespace

std::vector<int> tp_choices(const PlanRequest& request, std::map<std::string, std::size_t>& rejected) {
  // A profile measured one tensor-parallel size; only it is costed.
  if (request.profile) {
    check_fixed_tp(request, request.profile->tp, "the profile's tp");
    return {request.profile->tp};
  }
  if (request.tp) return {*request.tp};
  std::vector<int> choices;
  for (int t : divisors_up_to(request.gpus, request.hardware.local_gpus())) {
    if (tp_fits(request, t)) {
      choices.push_back(t);
    } else {
      ++rejected[models::on_node_link(request.hardware, t) ? "tensor parallel does not divide heads or GPUs"
                                                            : "tensor parallel groups leave an NVLink domain"];
    }
  }
  return choices;
}

namespace {

std::vector<int> cp_choices(const PlanRequest& request, int t, std::map<std::string, std::size_t>& rejected) {
  if (request.cp) return request.gpus / t % *request.cp == 0 ? std::vector<int>{*request.cp} : std::vector<int>{};
  // A profile measured whole sequences on each rank; Megatron-core runs
  // multi-token prediction without context parallelism.
  if (request.profile || request.mtp_layers > 0) return {1};
  std::vector<int> choices;
  for (int c : divisors_up_to(request.gpus / t, request.gpus / t)) {
    if (cp_fits(request, c)) {
      choices.push_back(c);
    } else {
      ++rejected["context parallel does not split the sequence in 2 x cp chunks"];
    }
  }
  return choices;
}

}  // namespace

SearchSpace::SearchSpace(const PlanRequest& request) {
  check_fixed_choices(request);
  std::vector<int> replica_batches;
  const std::vector<int> tps = tp_choices(request, rejected_);
  // A fixed --etp is taken from t: one that divides none of the t tried
  // leaves nothing, for that reason alone.
  if (request.etp && !request.tp && !tps.empty() &&
      std::none_of(tps.begin(), tps.end(), [&](int t) { return t % *request.etp == 0; })) {
    throw InputError(
        fmt::format("--etp {}: the expert tensor-parallel ranks are taken from t, and it divides none "
                    "of the t tried ({}); use an --etp dividing one of them",
                    *request.etp, fmt::join(tps, ", ")));
  }
  for (int t : tps) {
    for (int c : cp_choices(request, t, rejected_)) add_groups(request, t, c, replica_batches);
  }
  std::sort(replica_batches.begin(), replica_batches.end());
  replica_batches.erase(std::unique(replica_batches.begin(), replica_batches.end()), replica_batches.end());
  if (groups_.empty()) explain_no_layout(request, replica_batches, rejected_);
}

void SearchSpace::add_groups(const PlanRequest& request, int t, int c, std::vector<int>& replica_batches) {
  const int left = request.gpus / (t * c);
  const std::vector<int> pps = request.pp ? std::vector<int>{*request.pp} : divisors_up_to(left, request.model.layers);
  for (int p : pps) {
    if (left % p != 0) {
      ++rejected_["pipeline size does not divide the GPUs left by t x c"];
      continue;
    }
    const int d = left / p;
    if (request.dp && d != *request.dp) continue;
    if (request.global_batch % d != 0) {
      ++rejected_["global batch not divisible by the data-parallel size"];
      continue;
    }
    const int per_replica = request.global_batch / d;
    replica_batches.push_back(per_replica);
    const std::vector<int> sizes = request.micro_batch_size ? std::vector<int>{*request.micro_batch_size}
                                                            : divisors_up_to(per_replica, per_replica);
    for (int b : sizes) {
      if (per_replica % b != 0) {
        ++rejected_["micro-batch size does not divide the batch per replica"];
        continue;
      }
      if (static_cast<long double>(b) * request.seq_len > models::kMaxTokens) {
        ++rejected_["micro-batch of more tokens than any model takes (2^28)"];
        continue;
      }
      if (request.rank_order.value_or(false) && c > 1) {
        ++rejected_["context parallelism in Megatron's tp-pp-dp order (it takes c = 1)"];
        continue;
      }
      for (const ExpertLayout& experts : expert_layouts(request, t, c, d, rejected_)) {
        groups_.push_back({t, c, p, d, b, per_replica / b, experts.ep, experts.etp, request.rank_order.value_or(false)});
        if (!request.rank_order && pipeline_first_differs(request, groups_.back())) {
          groups_.push_back(groups_.back());
          groups_.back().pipeline_first = true;
        }
      }
    }
  }
}

std::vector<step::Framework> searched_frameworks(const PlanRequest& request) {
  if (request.framework != step::Framework::kAny) return {request.framework};
  std::vector<step::Framework> searched{step::Framework::kAny};
  for (const step::FrameworkInfo& info : step::frameworks()) searched.push_back(info.id);
  return searched;
}


std::vector<RecomputeChoice> recompute_choices(const PlanRequest& request) {
  if (request.recompute_modules) return {{models::Recompute::kSelective, *request.recompute_modules}};
  // A profile measures passes without recomputation (apply_profile refuses
  // the others), so measured costs are searched without it.
  if (request.profile && !request.recompute) return {{models::Recompute::kNone}};
  const unsigned modules = models::default_recompute_modules(request.model);
  if (request.recompute) return {{*request.recompute, modules}};
  std::vector<RecomputeChoice> choices{
      {models::Recompute::kNone}, {models::Recompute::kSelective, modules}, {models::Recompute::kFull}};
  // Each stage its own of the three, where the search splits by time under
  // the cap (its split is chosen with the settings).
  if (request.partition == step::PartitionMethod::kMemory && !request.layer_counts && !request.layout &&
      request.objective != Objective::kMemory) {
    choices.push_back({models::Recompute::kNone, modules, true});
  }
  return choices;
}

models::TrainingShape group_shape(const PlanRequest& request, const SearchGroup& group, models::ZeroStage zero,
                                  const RecomputeChoice& recompute) {
  models::TrainingShape shape;
  shape.micro_batch_size = group.micro_batch_size;
  shape.seq_len = request.seq_len;
  shape.tp = group.tp;
  shape.cp = group.cp;
  shape.dp = group.dp;
  shape.ep = group.ep;
  shape.etp = group.etp;
  shape.mtp_layers = request.mtp_layers;
  // The busiest of ep ranks gets at most ep x the average (1 with ep 1).
  shape.routing.load_imbalance = std::min(request.routing.load_imbalance, static_cast<double>(group.ep));
  shape.routing.capacity_factor = request.routing.capacity_factor;
  // DeepEP routes across an expert-parallel group; with ep 1 there is none.
  shape.routing.dispatcher = group.ep > 1 ? request.routing.dispatcher : models::MoeDispatcher::kAllToAll;
  // Megatron's advice: sequence parallelism with tensor parallelism; a
  // profile measured its shard without it.
  shape.sequence_parallel = request.sequence_parallel.value_or(group.tp > 1 && !request.profile) && group.tp > 1;
  shape.recompute = recompute.recompute;
  shape.recompute_modules = recompute.modules;
  shape.zero = zero;
  shape.pipelined = group.pp > 1;
  shape.pipeline_first_ranks = group.pipeline_first ? group.pp : 0;
  shape.apply(request.runtime);
  return shape;
}

PlanCandidate describe_candidate(const SearchGroup& group, const models::TrainingShape& shape,
                                 const ScheduleChoice& choice) {
  PlanCandidate candidate;
  // The shape's settings and the runtime flags that applied to it; the
  // degrees are the group's (a pipeline over kinds has a shape per kind).
  static_cast<models::RankLayout&>(candidate) = shape;
  candidate.tp = group.tp;
  candidate.cp = group.cp;
  candidate.dp = group.dp;
  candidate.ep = group.ep;
  candidate.etp = group.etp;
  candidate.micro_batch_size = group.micro_batch_size;
  candidate.pp = group.pp;
  candidate.pipeline_first = group.pipeline_first;
  candidate.microbatches = group.microbatches;
  candidate.virtual_stages = choice.virtual_stages;
  candidate.schedule = choice.name;
  candidate.activation_limit = choice.activation_limit;
  candidate.recompute_in_bubbles = choice.recompute_in_bubbles;
  // The all-to-all overlap applies to the schedules that pair.
  candidate.runtime.moe_a2a_overlap =
      candidate.runtime.moe_a2a_overlap &&
      sim::pairs_forward_backward(sim::find_schedule_family(choice.name).name, choice.virtual_stages);
  return candidate;
}

}  // namespace pipeplan::planner
