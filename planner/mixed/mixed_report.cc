#include "planner/mixed/mixed_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/units.h"
#include "planner/report/plan_summary.h"
#include "step/model_report.h"

namespace pipeplan::planner {
namespace {

// Transformer layers each pipeline rank holds (its chunks together).
std::vector<int> rank_layer_counts(const step::ModelSimulation& simulation) {
  std::vector<int> counts(static_cast<std::size_t>(simulation.schedule.ranks), 0);
  const std::vector<int> stages = simulation.split.transformer_layer_counts();
  for (std::size_t stage = 0; stage < stages.size(); ++stage) {
    counts[static_cast<std::size_t>(simulation.schedule.rank_of(static_cast<int>(stage)))] += stages[stage];
  }
  return counts;
}

bool some_tp(const MixedPipeline& pipeline) {
  return std::any_of(pipeline.segments.begin(), pipeline.segments.end(),
                     [](const KindSegment& segment) { return segment.tp > 1; });
}

bool one_tp(const MixedPipeline& pipeline) {
  return std::all_of(pipeline.segments.begin(), pipeline.segments.end(),
                     [&](const KindSegment& segment) { return segment.tp == pipeline.segments.front().tp; });
}

std::string kinds_text(const MixedSearchResult& search) {
  std::vector<std::string> parts;
  for (const KindPool& pool : search.pools) parts.push_back(fmt::format("{} {}", pool.gpus(), pool.kind));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string segments_label(const MixedPlan& plan, const std::vector<KindPool>& pools) {
  std::vector<std::string> parts;
  for (const KindSegment& segment : plan.pipeline.segments) {
    parts.push_back(fmt::format("{} t{} x{}", pools[segment.pool].kind, segment.tp, segment.stages));
  }
  return fmt::format("{}", fmt::join(parts, " | "));
}

nlohmann::ordered_json segments_json(const MixedPipeline& pipeline, const std::vector<KindPool>& pools) {
  nlohmann::ordered_json segments = nlohmann::ordered_json::array();
  for (const KindSegment& segment : pipeline.segments) {
    segments.push_back({{"kind", pools[segment.pool].kind}, {"stages", segment.stages}, {"tp", segment.tp}});
  }
  return segments;
}

std::string alone_lines(const MixedSearchResult& search) {
  std::string text = "each kind alone (the search on its own nodes):\n";
  for (const KindSearch& alone : search.alone) {
    const KindPool& pool = search.pools[alone.pool];
    if (!alone.result || alone.result->ranked.empty()) {
      text += fmt::format("  {:<12} {:>5} GPUs: no plan: {}\n", pool.kind, pool.gpus(), alone.refused);
      continue;
    }
    const PlanCandidate& c = alone.result->ranked.front();
    text += fmt::format("  {:<12} {:>5} GPUs: t={}{} p={} d={}, {}, {:.1f} ms, {:.0f} tokens/s\n", pool.kind,
                        pool.gpus(), c.tp, c.cp > 1 ? fmt::format(" c={}", c.cp) : "", c.pp, c.dp,
                        candidate_schedule_label(c), c.iteration_time_s * 1e3, c.tokens_per_s);
  }
  return text;
}

std::string rejected_line(const MixedSearchResult& search) {
  std::string text;
  for (const auto& [reason, count] : search.rejected) {
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", reason, count);
  }
  return text.empty() ? "none" : text;
}

std::string mixed_table(const MixedSearchResult& search) {
  std::string text = fmt::format("top {} over kinds (by the search's replay):\n  {:>2} {:<34} {:>3} {:>2} {:>4} "
                                 "{:<16} {:>2} {:<9} {:>10} {:>5} {:>10} {:>10} {}\n",
                                 search.ranked.size(), "#", "kind t x stages", "d", "b", "m", "schedule", "v",
                                 "recompute", "tokens/s", "MFU%", "iter ms", "peak", "split");
  for (std::size_t i = 0; i < search.ranked.size(); ++i) {
    const PlanCandidate& c = search.ranked[i].plan;
    text += fmt::format("  {:>2} {:<34} {:>3} {:>2} {:>4} {:<16} {:>2} {:<9} {:>10.0f} {:>5.1f} {:>10.1f} {:>10} {}\n",
                        i + 1, segments_label(search.ranked[i], search.pools), c.dp, c.micro_batch_size,
                        c.microbatches, c.schedule, c.virtual_stages, candidate_recompute_label(c), c.tokens_per_s,
                        c.mfu * 100, c.iteration_time_s * 1e3, format_bytes(c.max_peak_bytes), counts_text(c.split));
  }
  return text;
}

}  // namespace

std::string mixed_framework_line(const MixedPipeline& pipeline) {
  if (one_tp(pipeline)) {
    return "PyTorch's pipelining (torch.distributed.pipelining) can run it: each stage is a module built on its own "
           "ranks, so the split above is given by hand; Megatron-LM cannot (one GPU kind per job, "
           "NVIDIA/Megatron-LM#1757)";
  }
  return "no framework named here runs it: Megatron-LM, DeepSpeed and PyTorch's pipelining each take one "
         "tensor-parallel size for the whole pipeline (one device mesh); give every kind one t (--tp) for a plan "
         "PyTorch's pipelining runs";
}

nlohmann::ordered_json mixed_report_json(const MixedReport& report) {
  const MixedSearchResult& search = report.search;
  nlohmann::ordered_json json = {{"model", report.model},       {"hardware", report.cluster},
                                 {"gpus", report.gpus},         {"global_batch", report.global_batch},
                                 {"seq", report.seq_len},       {"search_time_s", search.search_time_s}};
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
  for (const KindSearch& alone : search.alone) {
    const KindPool& pool = search.pools[alone.pool];
    nlohmann::ordered_json kind = {{"kind", pool.kind}, {"gpus", pool.gpus()}};
    const bool found = alone.result && !alone.result->ranked.empty();
    kind["best"] = found ? candidate_json(alone.result->ranked.front()) : nlohmann::ordered_json();
    if (!found) kind["refused"] = alone.refused;
    kinds.push_back(std::move(kind));
  }
  json["kinds"] = std::move(kinds);
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const MixedPlan& plan : search.ranked) {
    nlohmann::ordered_json row = {{"segments", segments_json(plan.pipeline, search.pools)}};
    row.update(candidate_json(plan.plan));
    row.erase("tp");
    top.push_back(std::move(row));
  }
  json["over_kinds"] = {{"layouts", search.layouts},
                        {"candidates", search.candidates},
                        {"evaluated", search.evaluated},
                        {"pruned", search.pruned},
                        {"rejected", search.rejected},
                        {"top", std::move(top)}};
  if (report.alone_best) {
    json["best"] = {{"over_kinds", false}, {"kind", search.pools[*search.best_alone].kind}};
    json["best"]["plan"] = plan_report_json(*report.alone_best);
  } else if (report.mixed_best) {
    const MixedPlan& best = search.ranked.front();
    json["best"] = {{"over_kinds", true}, {"segments", segments_json(best.pipeline, search.pools)}};
    json["best"]["plan"] = simulation_json(best.plan, *report.mixed_best);
    json["best"]["plan"].erase("tp");
    json["best"]["runs_on"] = mixed_framework_line(best.pipeline);
  }
  return json;
}

std::string mixed_report_text(const MixedReport& report, bool whole) {
  const MixedSearchResult& search = report.search;
  std::string text = fmt::format(
      "{} on {}: {} GPUs ({}), global batch {} x {} tokens; searched in {:.3f} s\n{}"
      "stages over kinds: {} layouts (kinds, t, d, micro-batch, recompute), {} of their schedules bounded one by one, "
      "replayed {}, skipped {} whose bounds could not reach the top; rejected: {}\n\n",
      report.model, report.cluster, report.gpus, kinds_text(search), report.global_batch, report.seq_len,
      search.search_time_s, alone_lines(search), search.layouts, search.candidates, search.evaluated, search.pruned,
      rejected_line(search));
  if (report.alone_best) {
    const KindPool& pool = search.pools[*search.best_alone];
    text += fmt::format("best: {} alone ({} of the {} GPUs; the others idle){}\n\n", pool.kind, pool.gpus(),
                        report.gpus,
                        search.ranked.empty()
                            ? ""
                            : fmt::format(", {:.1f}% faster than the best over kinds",
                                          100 * (search.ranked.front().plan.iteration_time_s /
                                                     search.best_time_s() - 1)));
    text += whole ? plan_report_text(*report.alone_best) : plan_report_summary(*report.alone_best);
  } else if (report.mixed_best) {
    const MixedPlan& best = search.ranked.front();
    const PlanCandidate& plan = best.plan;
    text += "best: stages over kinds";
    for (const KindSearch& alone : search.alone) {
      if (!alone.result || alone.result->ranked.empty()) continue;
      text += fmt::format(", {:.1f}% faster than {} alone",
                          100 * (alone.result->ranked.front().iteration_time_s / plan.iteration_time_s - 1),
                          search.pools[alone.pool].kind);
    }
    text += "\n";
    const std::vector<int> counts = rank_layer_counts(*report.mixed_best);
    int rank = 0;
    for (const KindSegment& segment : best.pipeline.segments) {
      const std::vector<int> layers(counts.begin() + rank, counts.begin() + rank + segment.stages);
      const std::string ranks = segment.stages == 1 ? fmt::format("rank {}", rank)
                                                      : fmt::format("ranks {}-{}", rank, rank + segment.stages - 1);
      text += fmt::format("  {} on {}: t={} d={} ({} GPUs), layers {}\n", ranks, search.pools[segment.pool].kind,
                          segment.tp, plan.dp, segment.stages * segment.tp * plan.dp, fmt::join(layers, "/"));
      rank += segment.stages;
    }
    text += fmt::format("  {} (v={}), micro-batch {} x {}, recompute {}{}{}\n  runs on: {}\n",
                        plan.schedule, plan.virtual_stages, plan.micro_batch_size, plan.microbatches,
                        candidate_recompute_label(plan),
                        plan.zero != models::ZeroStage::kNone ? fmt::format(", ZeRO-{}", static_cast<int>(plan.zero))
                                                               : "",
                        plan.sequence_parallel && some_tp(best.pipeline) ? ", sequence parallel where t > 1" : "",
                        mixed_framework_line(best.pipeline));
    if (!one_tp(best.pipeline)) {
      const auto runnable = std::find_if(search.ranked.begin(), search.ranked.end(),
                                         [](const MixedPlan& plan) { return one_tp(plan.pipeline); });
      text += runnable == search.ranked.end()
                  ? "  none of the top plans over kinds has one t: --tp fixes one for every kind\n"
                  : fmt::format("  the fastest with one t for every kind is #{} of the table below ({:.1f} ms)\n",
                                runnable - search.ranked.begin() + 1, runnable->plan.iteration_time_s * 1e3);
    }
    text += step::model_simulation_to_text(*report.mixed_best);
  }
  if (!search.ranked.empty()) {
    text += '\n';
    text += mixed_table(search);
  }
  return text;
}

}  // namespace pipeplan::planner
