#include "planner/report/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

#include "common/text_wrap.h"
#include "common/units.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/report/placement_report.h"
#include "step/model_report.h"

namespace pipeplan::planner {

std::string counts_text(const step::StageSplit& split) {
  std::string text;
  for (int count : split.transformer_layer_counts()) text += fmt::format("{}{}", text.empty() ? "" : "/", count);
  return text;
}

namespace {

// Each stage's setting, in stage order: one per stage whether or not it
// varies.
std::vector<std::string> stage_recompute_names(const PlanCandidate& c) {
  if (!c.stage_recompute.empty()) return models::stage_recompute_names(c.stage_recompute);
  const std::size_t stages = static_cast<std::size_t>(c.pp) * static_cast<std::size_t>(c.virtual_stages);
  return std::vector<std::string>(stages, std::string(models::recompute_name(c.recompute)));
}

}  // namespace

nlohmann::ordered_json candidate_json(const PlanCandidate& c) {
  return {{"tp", c.tp},
          {"cp", c.cp},
          {"pp", c.pp},
          {"dp", c.dp},
          {"rank_order", std::string(models::megatron_order_name(c.pipeline_first))},
          {"ep", c.ep},
          {"etp", c.etp > 0 ? c.etp : c.tp},
          {"moe_dispatcher", std::string(models::moe_dispatcher_name(c.routing.dispatcher))},
          {"moe_a2a_overlap", c.runtime.moe_a2a_overlap},
          {"moe_load_imbalance", c.routing.load_imbalance},
          {"moe_capacity_factor", c.routing.capacity_factor},
          {"micro_batch_size", c.micro_batch_size},
          {"microbatches", c.microbatches},
          {"schedule", c.schedule},
          {"activation_limit",
           c.activation_limit ? nlohmann::ordered_json(c.activation_limit->spelled()) : nlohmann::ordered_json()},
          {"virtual", c.virtual_stages},
          {"recompute", c.stage_recompute.empty() ? std::string(models::recompute_name(c.recompute)) : "per-stage"},
          {"stage_recompute", stage_recompute_names(c)},
          {"recompute_in_bubbles", c.recompute_in_bubbles},
          {"recompute_modules", c.recomputes_selective() ? models::recompute_modules_name(c.recompute_modules) : ""},
          {"sequence_parallel", c.sequence_parallel},
          {"zero", static_cast<int>(c.zero)},
          {"overlap_grad_reduce", c.runtime.overlap_grad_reduce},
          {"overlap_param_gather", c.runtime.overlap_param_gather},
          {"grad_reduce_in_bf16", c.runtime.grad_reduce_in_bf16},
          {"optimizer_states_in_bf16", c.runtime.optimizer_states_in_bf16},
          {"master_weights_in_bf16", c.runtime.master_weights_in_bf16},
          {"fp8_param_gather", c.runtime.fp8_param_gather},
          {"tp_comm_overlap", c.runtime.tp_comm_overlap},
          {"precision", c.runtime.fp8 ? "fp8" : "bf16"},
          {"stage_layers", c.split.transformer_layer_counts()},
          {"layout", step::format_layout(c.split, c.mtp_layers)},
          {"iteration_time_s", c.iteration_time_s},
          {"tokens_per_s", c.tokens_per_s},
          {"mfu", c.mfu},
          {"bubble_rate", c.bubble_rate},
          {"goodput", c.goodput > 0 ? nlohmann::ordered_json(c.goodput) : nlohmann::ordered_json()},
          {"effective_tokens_per_s",
           c.goodput > 0 ? nlohmann::ordered_json(c.effective_tokens_per_s) : nlohmann::ordered_json()},
          {"peak_memory_bytes", c.peak_memory_bytes}};
}

nlohmann::ordered_json simulation_json(const PlanCandidate& plan, const step::ModelSimulation& simulation) {
  nlohmann::ordered_json json = candidate_json(plan);
  json["stage_layers"] = simulation.split.transformer_layer_counts();
  json["layout"] = step::format_layout(simulation.split, plan.mtp_layers);
  json["iteration_time_s"] = simulation.iteration_time_s;
  json["tokens_per_s"] = simulation.tokens_per_s;
  json["mfu"] = simulation.mfu;
  json["bubble_rate"] = simulation.report.bubble_rate;
  nlohmann::ordered_json peaks = nlohmann::ordered_json::array();
  nlohmann::ordered_json breakdowns = nlohmann::ordered_json::array();
  const nlohmann::ordered_json ranks = step::model_simulation_to_json(simulation)["ranks_detail"];
  for (std::size_t rank = 0; rank < simulation.memory.size(); ++rank) {
    peaks.push_back(simulation.memory[rank].total());
    breakdowns.push_back(ranks[rank]["memory_breakdown"]);
  }
  json["peak_memory_bytes"] = std::move(peaks);
  json["memory_breakdown"] = std::move(breakdowns);
  step::add_expert_comm_json(simulation, json);
  return json;
}

namespace {

// The expert axes appear only where some candidate has experts.
std::string expert_cells(const PlanCandidate& c, bool experts) {
  if (!experts) return "";
  return fmt::format(" {:>3} {:>3}", c.ep, c.etp > 0 ? c.etp : c.tp);
}

// `recompute_width`: the widest recomputation label of the table.
std::string candidate_row(std::size_t index, const PlanCandidate& c, bool experts, std::size_t recompute_width) {
  return fmt::format(
      "  {:>2} {:>2} {:>2} {:>3} {:>5}{} {:>1} {:>2} {:>4} {:<21} {:>2} {:<{}} {:>10.0f} {:>5.1f} {:>10.1f} {:>10} {}\n",
      index, c.tp, c.cp, c.pp, c.dp, expert_cells(c, experts), static_cast<int>(c.zero), c.micro_batch_size,
      c.microbatches, candidate_schedule_label(c), c.virtual_stages, candidate_recompute_label(c), recompute_width,
      c.tokens_per_s, c.mfu * 100, c.iteration_time_s * 1e3, format_bytes(c.max_peak_bytes), counts_text(c.split));
}

std::string table(const std::string& title, const std::vector<PlanCandidate>& candidates) {
  const bool experts =
      std::any_of(candidates.begin(), candidates.end(), [](const PlanCandidate& c) { return c.etp > 0; });
  std::size_t recompute_width = 9;
  for (const PlanCandidate& c : candidates) recompute_width = std::max(recompute_width, candidate_recompute_label(c).size());
  std::string text = fmt::format(
      "{}\n  {:>2} {:>2} {:>2} {:>3} {:>5}{} {:>1} {:>2} {:>4} {:<21} {:>2} {:<{}} {:>10} {:>5} {:>10} {:>10} {}\n",
      title, "#", "t", "c", "p", "d", experts ? fmt::format(" {:>3} {:>3}", "ep", "etp") : "", "z", "b", "m",
      "schedule", "v", "recompute", recompute_width, "tokens/s", "MFU%", "iter ms", "peak", "split");
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    text += candidate_row(i + 1, candidates[i], experts, recompute_width);
  }
  return text;
}

// A framework's fragment indented under its title, or why there is none.
std::string framework_text(const std::string& title, const FrameworkConfig& config) {
  if (config.text.empty()) return fmt::format("\n{}: not written: {}\n", title, fmt::join(config.refusals, "; "));
  std::string text = fmt::format("\n{}:\n", title);
  std::istringstream lines(config.text);
  for (std::string line; std::getline(lines, line);) text += line.empty() ? "\n" : "  " + line + "\n";
  return text;
}

std::string rejected_text(const PlanSearchResult& search) {
  std::string text;
  for (const auto& [reason, count] : search.rejected) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", reason, count);
  return text.empty() ? "none" : text;
}

}  // namespace

nlohmann::ordered_json plan_report_json(const PlanReport& report) {
  nlohmann::ordered_json json = {{"model", report.model},
                                 {"hardware", report.hardware},
                                 {"gpus", report.gpus},
                                 {"global_batch", report.global_batch},
                                 {"seq", report.seq_len},
                                 {"memory_cap_bytes", report.search.memory_cap_bytes},
                                 // What every plan's peak is held under, as simulate names it.
                                 {"memory_limit_bytes", report.search.memory_cap_bytes},
                                 {"warnings", report.search.warnings}};
  json["best"] = simulation_json(report.best_plan, report.best);
  if (report.even) {
    json["even_split"] = simulation_json(report.best_plan, *report.even);
    if (!report.even_reason.empty()) json["even_split"]["infeasible"] = report.even_reason;
  } else {
    json["even_split"] = {{"infeasible", report.even_reason}};
  }
  json["megatron_args"] =
      megatron_arguments(report.best_plan, report.global_batch, report.seq_len, &report.model_config);
  json["torchtitan_toml"] = report.torchtitan.text;
  json["torchtitan_refusals"] = report.torchtitan.refusals;
  json["torchtitan_notes"] = report.torchtitan.notes;
  json["megatron_bridge_yaml"] = report.megatron_bridge.text;
  json["megatron_bridge_refusals"] = report.megatron_bridge.refusals;
  json["megatron_bridge_notes"] = report.megatron_bridge.notes;
  json["deepspeed_json"] = report.deepspeed.text;
  json["deepspeed_refusals"] = report.deepspeed.refusals;
  json["deepspeed_notes"] = report.deepspeed.notes;
  json["rank_placement"] = {{"cluster", report.cluster.name},
                            {"order", std::string(models::megatron_order_name(report.best_plan.pipeline_first))}};
  json["rank_placement"].update(placement_json(report.placement));
  nlohmann::ordered_json top = nlohmann::ordered_json::array(), pareto = nlohmann::ordered_json::array();
  for (const PlanCandidate& c : report.search.ranked) top.push_back(candidate_json(c));
  for (const PlanCandidate& c : report.search.pareto) pareto.push_back(candidate_json(c));
  json["top"] = std::move(top);
  json["pareto"] = std::move(pareto);
  // The framework kept to, and the best plan each framework runs (with
  // "any": every one's; kept to one: its own).
  json["framework"] = std::string(step::framework_info(report.framework).key);
  nlohmann::ordered_json frameworks = nlohmann::ordered_json::array();
  for (std::size_t f = 0; f < step::kFrameworkCount; ++f) {
    const step::FrameworkInfo& info = step::frameworks()[f];
    const std::optional<PlanCandidate>& found = report.search.framework_best[f];
    nlohmann::ordered_json entry = {{"framework", std::string(info.key)}, {"version", std::string(info.version)}};
    entry["best"] = found ? candidate_json(*found) : nlohmann::ordered_json();
    entry["throughput_vs_best"] =
        found ? nlohmann::ordered_json(found->tokens_per_s / report.best_plan.tokens_per_s - 1) : nlohmann::ordered_json();
    frameworks.push_back(std::move(entry));
  }
  json["frameworks"] = std::move(frameworks);
  nlohmann::ordered_json runners = nlohmann::ordered_json::array();
  for (const step::FrameworkInfo* info : step::frameworks_in(report.best_plan.frameworks)) {
    runners.push_back(std::string(info->key));
  }
  json["best_run_by"] = std::move(runners);
  json["candidates_evaluated"] = report.search.candidates_evaluated;
  json["candidates_pruned"] = report.search.candidates_pruned;
  json["search_time_s"] = report.search.search_time_s;
  json["rejected"] = report.search.rejected;
  return json;
}

std::string plan_report_text(const PlanReport& report) {
  const PlanCandidate& plan = report.best_plan;
  std::string text = fmt::format(
      "{} on {} GPUs of {}: global batch {} x {} tokens, memory cap {}\n"
      "replayed {} candidates in {:.3f} s, skipped {} whose bounds reach neither the top nor the Pareto front\n"
      "{}\n",
      report.model, report.gpus, report.hardware, report.global_batch, report.seq_len,
      format_bytes(report.search.memory_cap_bytes), report.search.candidates_evaluated,
      report.search.search_time_s, report.search.candidates_pruned,
      wrap("rejected: " + rejected_text(report.search), "  "));
  for (const std::string& warning : report.search.warnings) text.insert(text.size() - 1, fmt::format("warning: {}\n", warning));
  text += fmt::format("best: t={}{} p={} d={}{}{}{}, micro-batch {} x {}, {} (v={}), recompute {}{}, split {}\n", plan.tp,
                      plan.cp > 1 ? fmt::format(" c={}", plan.cp) : "", plan.pp, plan.dp,
                      plan.pipeline_first ? " (ranks tp-pp-dp)" : "",
                      plan.etp > 0 ? fmt::format(" ep={} etp={}{}", plan.ep, plan.etp,
                                                 plan.routing.dispatcher == models::MoeDispatcher::kDeepEp ? " deepep" : "")
                                   : "",
                      plan.zero != models::ZeroStage::kNone ? fmt::format(" ZeRO-{}", static_cast<int>(plan.zero)) : "",
                      plan.micro_batch_size, plan.microbatches, candidate_schedule_label(plan), plan.virtual_stages,
                      candidate_recompute_label(plan), plan.runtime.fp8 ? ", fp8" : "",
                      counts_text(report.best.split));
  if (plan.goodput > 0) {
    text += fmt::format("goodput: {:.2f} % of the time trains, {:.0f} tokens/s once failures, restarts and checkpoints "
                        "count (`pipeplan goodput --plan` with this plan's file details it)\n",
                        plan.goodput * 100, plan.effective_tokens_per_s);
  }
  // A profile's notes say where its shapes were interpolated or extrapolated.
  text += fmt::format("costs: {}\n", report.best.cost_source);
  text += step::model_simulation_to_text(report.best);
  text += "\nMegatron's even split with the same settings:\n";
  if (report.even) {
    text += step::model_simulation_summary(*report.even);
    if (!report.even_reason.empty()) text += fmt::format("  {}\n", report.even_reason);
  } else {
    text += fmt::format("  not possible: {}\n", report.even_reason);
  }
  text += fmt::format("\nMegatron-LM arguments:\n  {}\n",
                      megatron_arguments(plan, report.global_batch, report.seq_len, &report.model_config));
  text += framework_text("torchtitan job config (TOML)", report.torchtitan);
  text += framework_text("Megatron-Bridge recipe overrides (YAML)", report.megatron_bridge);
  text += framework_text("DeepSpeed config (JSON)", report.deepspeed);
  for (const std::string& note : report.deepspeed.notes) text += fmt::format("  with it: {}\n", note);
  text += fmt::format("\nplacement on {}, ranks in Megatron's order {} ({}):\n{}\n", report.cluster.name,
                      models::megatron_order_name(plan.pipeline_first),
                      plan.pipeline_first ? "--use-tp-pp-dp-mapping" : "its default, no flag needed",
                      placement_text(report.cluster, report.placement));
  const bool by_goodput = !report.search.ranked.empty() && report.search.ranked.front().goodput > 0;
  text += table(fmt::format("top {} (by the search's replay{}):", report.search.ranked.size(),
                            by_goodput ? ", ranked by tokens/s x goodput" : ""),
                report.search.ranked);
  text += '\n';
  text += table("Pareto front (iteration time against peak memory):", report.search.pareto);
  return text;
}

}  // namespace pipeplan::planner
