#include "planner/api/make_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/units.h"
#include "models/placement.h"
#include "models/recompute.h"
#include "planner/frameworks/deepspeed_config.h"
#include "planner/frameworks/megatron_bridge_overrides.h"
#include "planner/frameworks/plan_refusal.h"
#include "planner/frameworks/torchtitan_config.h"
#include "planner/mixed/mixed_search.h"
#include "planner/report/plan_replay.h"
#include "planner/search/plan_search.h"

namespace pipeplan::planner {
namespace {

// What could bring the closest candidate under the cap.
std::string infeasible_advice(const PlanCandidate* closest, const PlanRequest& request) {
  std::vector<std::string> advice{"more GPUs"};
  if (closest == nullptr || closest->recompute != models::Recompute::kFull) {
    const std::string given =
        request.recompute_modules ? "--recompute-modules " + models::recompute_modules_name(*request.recompute_modules)
        : request.recompute       ? "--recompute " + std::string(models::recompute_name(*request.recompute))
                                  : "";
    advice.push_back(given.empty() ? "--recompute full" : "--recompute full instead of " + given);
  }
  if (closest == nullptr || closest->micro_batch_size > 1) advice.push_back("a smaller --micro-batch-size");
  if (request.tp || request.pp) advice.push_back("leaving --tp and --pp to the search");
  // Context parallelism divides every activation by c; ZeRO shards the state.
  if (request.cp) advice.push_back(fmt::format("a --cp above {} (or leaving it to the search)", *request.cp));
  if (request.zero && *request.zero < models::ZeroStage::kWeights) advice.push_back("leaving --zero to the search");
  advice.push_back("a shorter --seq");
  advice.push_back(request.memory_cap_bytes > 0 ? "a larger --memory-cap" : "a GPU with more memory");
  std::string text;
  for (std::size_t i = 0; i < advice.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == advice.size() ? " or " : ", ") + advice[i];
  }
  return text;
}

// A framework's config is written only for a plan it runs as planned (the
// search's own rules): otherwise its figures would not be the plan's.
void keep_to_what_runs(step::Framework framework, const PlanCandidate& plan, int seq_len, FrameworkConfig& config) {
  const char* reason = plan_refusal(framework, plan, seq_len);
  if (reason == nullptr || config.text.empty()) return;
  const step::FrameworkInfo& info = step::framework_info(framework);
  config.text.clear();
  config.refusals.push_back(fmt::format("{} {} does not run the best plan as planned ({}); `plan ... --framework {}` "
                                        "plans within it",
                                        info.name, info.version, reason, info.key));
}

// The full report of a search already run (ranked best first, not empty).
PlanReport report_plan(const PlanRequest& request, PlanSearchResult search, const PlanSources& sources) {
  PlanReport report;
  report.model = request.model.name;
  report.model_config = request.model;
  report.hardware = request.hardware.name;
  report.gpus = request.gpus;
  report.global_batch = request.global_batch;
  report.seq_len = request.seq_len;
  report.search = std::move(search);
  report.best_plan = report.search.ranked.front();
  const auto cap = static_cast<std::int64_t>(request.memory_cap_bytes);
  report.file = {sources.model, sources.hardware, request.global_batch, request.seq_len, report.best_plan,
                 "",            request.profile_file, cap};
  report.best = replay_plan(report.file, request.model, request.hardware, {},
                            request.profile ? &*request.profile : nullptr, cap);
  take_figures(report.best, report.file.plan);
  fill_even_split(report, request);
  const PlanCandidate& best = report.best_plan;
  report.cluster = models::hardware_as_cluster(request.hardware, request.gpus);
  // The search kept tensor parallelism in its NVLink domain unless allowed out.
  // A plan without experts to fold may still carry their t (etp).
  models::JobLayout placed = best;
  if (placed.ep == 1) placed.etp = 0;
  report.placement = models::place_job(report.cluster, placed, models::megatron_rank_order(best.pipeline_first), true);
  report.torchtitan = torchtitan_config(best, request.global_batch, request.seq_len, &request.model);
  report.megatron_bridge = megatron_bridge_overrides(best, request.global_batch, request.seq_len, &request.model);
  report.deepspeed = deepspeed_config(best, request.global_batch, request.seq_len);
  keep_to_what_runs(step::Framework::kTorchtitan, best, request.seq_len, report.torchtitan);
  keep_to_what_runs(step::Framework::kMegatronBridge, best, request.seq_len, report.megatron_bridge);
  report.framework = request.framework;
  return report;
}

}  // namespace

std::string no_plan_fits(const PlanSearchResult& search, const PlanRequest& request) {
  if (!search.lowest_peak && search.rejected.count("out of memory") == 0) {
    std::string reasons;
    for (const auto& [reason, count] : search.rejected) {
      reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", reason, count);
    }
    // The choices the user fixed, which are what can be relaxed.
    std::vector<std::string> fixed;
    for (const auto& [name, given] :
         {std::pair{"--tp", request.tp.has_value()}, std::pair{"--cp", request.cp.has_value()},
          std::pair{"--pp", request.pp.has_value()}, std::pair{"--dp", request.dp.has_value()},
          std::pair{"--zero", request.zero.has_value()}, std::pair{"--schedule", request.schedule.has_value()},
          std::pair{"--virtual", request.virtual_stages.has_value()},
          std::pair{"--micro-batch-size", request.micro_batch_size.has_value()},
          std::pair{"--recompute", request.recompute.has_value()},
          std::pair{"--recompute-modules", request.recompute_modules.has_value()},
          std::pair{"--layers", request.layer_counts.has_value()}, std::pair{"--layout", request.layout.has_value()}}) {
      if (given) fixed.push_back(name);
    }
    return fmt::format("no candidate can run the fixed choices (rejected: {}); relax {}", reasons,
                       fixed.empty() ? std::string("the request") : fmt::format("{}", fmt::join(fixed, ", ")));
  }
  std::string closest = "no candidate could be costed";
  const PlanCandidate* lowest = search.lowest_peak ? &*search.lowest_peak : nullptr;
  if (lowest != nullptr) {
    const PlanCandidate& c = *lowest;
    closest = fmt::format("the smallest peak found is {} (t={} c={} p={} d={}, micro-batch {}, {}, recompute {})",
                          format_bytes(c.max_peak_bytes), c.tp, c.cp, c.pp, c.dp, c.micro_batch_size,
                          candidate_schedule_label(c), models::recompute_label(c.recompute, c.recompute_modules));
  }
  return fmt::format("no plan fits the memory cap of {}: {}; try {}", format_bytes(search.memory_cap_bytes), closest,
                     infeasible_advice(lowest, request));
}

PlanReport make_plan(const PlanRequest& request, const PlanSources& sources, std::size_t top_k) {
  PlanSearchResult search = search_plans(request, std::max<std::size_t>(1, top_k));
  if (search.ranked.empty()) throw InputError(no_plan_fits(search, request));
  return report_plan(request, std::move(search), sources);
}

models::HardwareConfig kind_with_least_memory(const models::ClusterConfig& cluster) {
  const std::vector<KindPool> pools = kind_pools(cluster);
  return std::min_element(pools.begin(), pools.end(), [](const KindPool& a, const KindPool& b) {
           return a.hardware.gpu.memory_bytes < b.hardware.gpu.memory_bytes;
         })->hardware;
}

MixedReport make_mixed_plan(const PlanRequest& request, const models::ClusterConfig& cluster,
                            const PlanSources& sources, std::size_t top_k) {
  MixedReport report;
  report.model = request.model.name;
  report.cluster = cluster.name;
  report.gpus = request.gpus;
  report.global_batch = request.global_batch;
  report.seq_len = request.seq_len;
  report.search = search_mixed_plans(request, cluster, std::max<std::size_t>(1, top_k));
  if (!report.search.found()) {
    std::string reasons;
    for (const KindSearch& alone : report.search.alone) {
      const KindPool& pool = report.search.pools[alone.pool];
      reasons += fmt::format("; {} alone ({} GPUs): {}", pool.kind, pool.gpus(), alone.refused);
    }
    throw InputError(fmt::format("no plan fits on {}: no pipeline over its kinds fits{}", cluster.name, reasons));
  }
  if (report.search.best_alone) {
    const KindSearch& alone = report.search.alone[*report.search.best_alone];
    const KindPool& pool = report.search.pools[alone.pool];
    PlanRequest kind_request = request;
    kind_request.hardware = pool.hardware;
    kind_request.gpus = pool.gpus();
    report.alone_best = report_plan(kind_request, *alone.result, {sources.model, sources.hardware + ":" + pool.kind});
    report.file = report.alone_best->file;
    return report;
  }
  const MixedPlan& best = report.search.ranked.front();
  step::PipelineSetup setup = mixed_setup(best.plan, request.seq_len);
  setup.split = best.plan.split;
  setup.memory_cap_bytes = static_cast<std::int64_t>(request.memory_cap_bytes);
  report.mixed_best = simulate_mixed(request.model, report.search.pools, cluster.tiers, best.pipeline, setup);
  report.file = {sources.model, sources.hardware, request.global_batch, request.seq_len, best.plan,
                 "",            "",               setup.memory_cap_bytes};
  for (const KindSegment& segment : best.pipeline.segments) {
    report.file.segments.push_back({report.search.pools[segment.pool].kind, segment.stages, segment.tp});
  }
  take_figures(*report.mixed_best, report.file.plan);
  return report;
}

}  // namespace pipeplan::planner
