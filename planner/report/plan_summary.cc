#include "planner/report/plan_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <utility>
#include <vector>

#include "common/text_wrap.h"
#include "common/units.h"
#include "planner/frameworks/megatron_args.h"
#include "sim/memory_fit.h"
#include "step/model_report.h"

namespace pipeplan::planner {
namespace {

constexpr std::size_t kWidth = kTextWidth;
constexpr std::size_t kMemoryRows = 8;

// A pipeline's schedule; one rank runs none.
std::string schedule_text(const PlanCandidate& c) {
  if (c.pp == 1 && c.virtual_stages == 1) return "no pipeline";
  return c.virtual_stages > 1 ? fmt::format("{} v={}", candidate_schedule_label(c), c.virtual_stages)
                              : candidate_schedule_label(c);
}

std::string degrees_text(const PlanCandidate& c) {
  std::string text = fmt::format("t={}{} p={} d={}", c.tp, c.cp > 1 ? fmt::format(" c={}", c.cp) : "", c.pp, c.dp);
  if (c.etp > 0) text += fmt::format(" ep={} etp={}", c.ep, c.etp);
  return text;
}

// The layout's settings (the split apart), a part each.
std::vector<std::string> layout_parts(const PlanCandidate& c) {
  std::vector<std::string> parts{degrees_text(c)};
  if (c.zero != models::ZeroStage::kNone) parts.push_back(fmt::format("ZeRO-{}", static_cast<int>(c.zero)));
  parts.push_back(fmt::format("micro-batch {} x {} micro-batches", c.micro_batch_size, c.microbatches));
  parts.push_back(schedule_text(c));
  parts.push_back("recompute " + candidate_recompute_label(c));
  if (c.sequence_parallel) parts.emplace_back("sequence parallel");
  if (c.pipeline_first) parts.emplace_back("ranks tp-pp-dp");
  if (c.runtime.fp8) parts.emplace_back("fp8");
  if (c.routing.dispatcher == models::MoeDispatcher::kDeepEp && c.ep > 1) parts.emplace_back("DeepEP");
  return parts;
}

// Parts after `title`, joined by commas, a line broken only between parts.
std::string wrap_parts(const std::string& title, const std::vector<std::string>& parts) {
  std::string text, line = title;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string part = parts[i] + (i + 1 < parts.size() ? "," : "");
    if (line.size() > title.size() && line.size() + 1 + part.size() > kWidth) {
      text += line + "\n";
      line = "  ";
    }
    line += (line.size() > 2 && line != title ? " " : "") + part;
  }
  return text + line + "\n";
}

// The framework's overlaps and precision the plan assumes: off unless
// asked for, as Megatron-LM's arguments default (its recipes turn them on).
std::string runtime_text(const PlanCandidate& c) {
  const models::RuntimeFlags& r = c.runtime;
  std::vector<std::string> on;
  for (const auto& [flag, name] : {std::pair{r.overlap_grad_reduce, "--overlap-grad-reduce"},
                                   std::pair{r.overlap_param_gather, "--overlap-param-gather"},
                                   std::pair{r.grad_reduce_in_bf16, "--grad-reduce-in-bf16"},
                                   std::pair{r.tp_comm_overlap, "--tp-comm-overlap"},
                                   std::pair{r.moe_a2a_overlap, "--moe-a2a-overlap"},
                                   std::pair{r.optimizer_states_in_bf16, "--optimizer-states-in-bf16"},
                                   std::pair{r.master_weights_in_bf16, "--master-weights-in-bf16"},
                                   std::pair{r.fp8_param_gather, "--fp8-param-gather"}}) {
    if (flag) on.emplace_back(name);
  }
  if (on.empty()) {
    return "no overlaps, fp32 gradient reduction (Megatron-LM's defaults; give --overlap-grad-reduce etc. as run)";
  }
  return fmt::format("{} (as given)", fmt::join(on, " "));
}

std::string headline(const PlanReport& report) {
  const step::ModelSimulation& best = report.best;
  const std::int64_t peak = best.peak_memory_bytes();
  const bool fits = sim::ranks_over_memory(best.report).empty();
  std::string text = fmt::format(
      "best: {} per step, {:.0f} tokens/s, MFU {:.1f} %; {} (peak {} of {})\n", format_duration(best.iteration_time_s),
      best.tokens_per_s, best.mfu * 100, fits ? "fits" : "DOES NOT FIT", format_bytes(static_cast<double>(peak)),
      format_bytes(report.search.memory_cap_bytes));
  text += wrap_parts("layout: ", layout_parts(report.best_plan));
  // A profile's notes say where its shapes were interpolated or extrapolated.
  text += wrap("costs: " + best.cost_source + "; MFU counts attention's full s x s square (Narayanan et al. 2021, Eq. 3)",
               "  ");
  // Megatron's layout string where Megatron runs the plan and it fits a line.
  std::string split = clip("split: blocks per stage " + folded_counts(best.split), kWidth);
  const std::string layout = step::format_layout(best.split, best.mtp_layers);
  const bool megatron = (report.best_plan.frameworks & step::framework_bit(step::Framework::kMegatronLm)) != 0;
  if (megatron && split.size() + layout.size() + 19 <= kWidth) {
    split += "; Megatron layout " + layout;
  } else if (megatron && layout.size() + 17 <= kWidth) {
    split += "\n  Megatron layout " + layout;
  }
  text += split + "\n";
  text += wrap("runtime: " + runtime_text(report.best_plan), "  ");
  text += fmt::format("step: pipeline {} + gradient sync {} + optimizer {}; bubble {:.1f} % of the ranks' time\n",
                      format_duration(best.pipeline_s), format_duration(best.gradient_sync_s),
                      format_duration(best.optimizer_step_s), best.report.bubble_rate * 100);
  if (report.even) {
    text += fmt::format("the even split (Megatron's default) with these settings: {:.0f} tokens/s ({:+.1f} %), peak {}{}\n",
                        report.even->tokens_per_s, 100 * (report.even->tokens_per_s / best.tokens_per_s - 1),
                        format_bytes(static_cast<double>(report.even->peak_memory_bytes())),
                        report.even_reason.empty() ? "" : ", over the cap");
  }
  return text;
}

// Each rank's memory; ranks with the same figures share a row, and past
// kMemoryRows rows the heaviest are kept (rank order kept).
std::string memory_table(const step::ModelSimulation& simulation) {
  struct Row {
    std::size_t first, last;
    const step::MemoryBreakdown* memory;
  };
  std::vector<Row> rows;
  const auto same = [](const step::MemoryBreakdown& a, const step::MemoryBreakdown& b) {
    return a.weights == b.weights && a.gradients == b.gradients && a.optimizer == b.optimizer &&
           a.activations == b.activations && a.logits == b.logits && a.buffers == b.buffers;
  };
  for (std::size_t rank = 0; rank < simulation.memory.size(); ++rank) {
    if (!rows.empty() && same(*rows.back().memory, simulation.memory[rank])) {
      rows.back().last = rank;
    } else {
      rows.push_back({rank, rank, &simulation.memory[rank]});
    }
  }
  std::size_t left_out = 0;
  if (rows.size() > kMemoryRows) {
    std::vector<Row> heaviest = rows;
    std::stable_sort(heaviest.begin(), heaviest.end(),
                     [](const Row& a, const Row& b) { return a.memory->total() > b.memory->total(); });
    heaviest.resize(kMemoryRows);
    std::sort(heaviest.begin(), heaviest.end(), [](const Row& a, const Row& b) { return a.first < b.first; });
    left_out = rows.size() - kMemoryRows;
    rows = std::move(heaviest);
  }
  std::string text = fmt::format("  {:>7} {:>10} {:>10} {:>10} {:>11} {:>10} {:>11} {:>10}\n", "ranks", "weights",
                                 "grads", "optimizer", "activations", "logits", "comm bufs", "peak");
  for (const Row& row : rows) {
    const step::MemoryBreakdown& m = *row.memory;
    const std::string ranks = row.first == row.last ? fmt::format("{}", row.first) : fmt::format("{}-{}", row.first, row.last);
    text += fmt::format("  {:>7} {:>10} {:>10} {:>10} {:>11} {:>10} {:>11} {:>10}\n", ranks, format_bytes(m.weights),
                        format_bytes(m.gradients), format_bytes(m.optimizer), format_bytes(m.activations),
                        format_bytes(m.logits), format_bytes(m.buffers), format_bytes(m.total()));
  }
  if (left_out > 0) text += fmt::format("  ({} lighter rows left out; --verbose lists every rank)\n", left_out);
  return text;
}

std::string search_lines(const PlanSearchResult& search) {
  std::size_t rejected = 0;
  std::vector<std::pair<std::size_t, std::string>> reasons;
  for (const auto& [reason, count] : search.rejected) {
    rejected += count;
    reasons.emplace_back(count, reason);
  }
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = fmt::format(
      "searched: {} candidates bounded, {} replayed in full in {}, {} skipped by their bounds;\n"
      "  {} more left out, most often for:\n",
      search.candidates_evaluated + search.candidates_pruned, search.candidates_evaluated,
      format_duration(search.search_time_s), search.candidates_pruned, rejected);
  // The three commonest reasons, and running out of memory wherever it ranks.
  std::size_t shown = 0;
  for (const auto& [count, reason] : reasons) {
    if (shown >= 3 && reason != "out of memory") continue;
    text += clip(fmt::format("    {:>9}  {}", count, reason), kWidth) + "\n";
    ++shown;
  }
  if (shown < reasons.size()) text += fmt::format("    and {} other reasons (--verbose)\n", reasons.size() - shown);
  return text;
}

// A column of the top table: its header and each candidate's cell.
struct Column {
  std::string header;
  std::function<std::string(const PlanCandidate&)> cell;
  bool left = false;  // text, aligned left
};

// The top plans, with the layout columns that tell them apart and the figures.
std::string top_table(const std::vector<PlanCandidate>& top) {
  const std::vector<Column> layout_columns = {
      {"t", [](const PlanCandidate& c) { return std::to_string(c.tp); }},
      {"c", [](const PlanCandidate& c) { return std::to_string(c.cp); }},
      {"p", [](const PlanCandidate& c) { return std::to_string(c.pp); }},
      {"d", [](const PlanCandidate& c) { return std::to_string(c.dp); }},
      {"ep", [](const PlanCandidate& c) { return c.etp > 0 ? std::to_string(c.ep) : "-"; }},
      {"etp", [](const PlanCandidate& c) { return c.etp > 0 ? std::to_string(c.etp) : "-"; }},
      {"ZeRO", [](const PlanCandidate& c) { return std::to_string(static_cast<int>(c.zero)); }},
      {"b", [](const PlanCandidate& c) { return std::to_string(c.micro_batch_size); }},
      {"m", [](const PlanCandidate& c) { return std::to_string(c.microbatches); }},
      {"schedule", [](const PlanCandidate& c) { return c.pp == 1 ? "no pipeline" : candidate_schedule_label(c); },
       true},
      {"v", [](const PlanCandidate& c) { return std::to_string(c.virtual_stages); }},
      {"recompute", [](const PlanCandidate& c) { return clip(candidate_recompute_label(c), 28); }, true},
      {"rank order", [](const PlanCandidate& c) { return std::string(models::megatron_order_name(c.pipeline_first)); },
       true},
      {"split", [](const PlanCandidate& c) { return clip(folded_counts(c.split), 30); }, true},
  };
  const std::vector<Column> figures = {
      {"tokens/s", [](const PlanCandidate& c) { return fmt::format("{:.0f}", c.tokens_per_s); }},
      {"MFU %", [](const PlanCandidate& c) { return fmt::format("{:.1f}", c.mfu * 100); }},
      {"step", [](const PlanCandidate& c) { return format_duration(c.iteration_time_s); }},
      {"peak", [](const PlanCandidate& c) { return format_bytes(static_cast<double>(c.max_peak_bytes)); }},
  };
  std::vector<const Column*> shown;
  for (const Column& column : layout_columns) {
    const bool differs = std::any_of(top.begin(), top.end(), [&](const PlanCandidate& c) {
      return column.cell(c) != column.cell(top.front());
    });
    if (differs) shown.push_back(&column);
  }
  for (const Column& column : figures) shown.push_back(&column);
  std::vector<std::size_t> widths;
  for (const Column* column : shown) {
    std::size_t width = column->header.size();
    for (const PlanCandidate& c : top) width = std::max(width, column->cell(c).size());
    widths.push_back(width);
  }
  const auto row = [&](const std::string& first, const std::function<std::string(std::size_t)>& cell) {
    std::string line = fmt::format("  {:>2}", first);
    for (std::size_t i = 0; i < shown.size(); ++i) {
      line += shown[i]->left ? fmt::format(" {:<{}}", cell(i), widths[i]) : fmt::format(" {:>{}}", cell(i), widths[i]);
    }
    return clip(line, kWidth) + "\n";
  };
  std::string text = row("#", [&](std::size_t i) { return shown[i]->header; });
  for (std::size_t k = 0; k < top.size(); ++k) {
    text += row(std::to_string(k + 1), [&](std::size_t i) { return shown[i]->cell(top[k]); });
  }
  return text;
}

// The best plan each framework runs, and how far behind the best overall.
std::string frameworks_table(const PlanReport& report) {
  const double best = report.best_plan.tokens_per_s;
  std::string text = fmt::format("  {:<19} {:<13} {:>9} {:>8}  {}\n", "framework", "version", "tokens/s", "vs best",
                                 "its best plan");
  for (std::size_t f = 0; f < step::kFrameworkCount; ++f) {
    const step::FrameworkInfo& info = step::frameworks()[f];
    const std::optional<PlanCandidate>& found = report.search.framework_best[f];
    if (!found) {
      text += fmt::format("  {:<19} {:<13} {:>9} {:>8}  none: nothing it runs as planned, with the options given, fits\n",
                          info.name, info.version, "-", "-");
      continue;
    }
    const std::string line =
        fmt::format("  {:<19} {:<13} {:>9.0f} {:>8}  {}, {}, ZeRO-{}, recompute {}", info.name, info.version,
                    found->tokens_per_s, fmt::format("{:+.1f} %", 100 * (found->tokens_per_s / best - 1)),
                    degrees_text(*found), schedule_text(*found),
                    static_cast<int>(found->zero), candidate_recompute_label(*found));
    text += clip(line, kWidth) + "\n";
  }
  return text;
}

// Who runs the best plan, and its arguments where they are one line.
std::string run_lines(const PlanReport& report) {
  const PlanCandidate& plan = report.best_plan;
  std::vector<std::string> runners;
  for (const step::FrameworkInfo* info : step::frameworks_in(plan.frameworks)) runners.emplace_back(info->name);
  std::string text;
  const bool megatron = (plan.frameworks & step::framework_bit(step::Framework::kMegatronLm)) != 0;
  if (report.framework == step::Framework::kAny) {
    text = runners.empty() ? "no framework runs it as planned" : fmt::format("run as planned by {}", fmt::join(runners, ", "));
    const std::optional<PlanCandidate>& megatron_best =
        report.search.framework_best[static_cast<std::size_t>(step::Framework::kMegatronLm)];
    text += megatron || !megatron_best ? "; --framework NAME plans within one and prints its settings\n"
                                       : "; `--framework megatron-lm` plans within Megatron-LM, with its arguments\n";
  }
  const bool asked = report.framework == step::Framework::kMegatronLm || report.framework == step::Framework::kAny;
  if (megatron && asked) {
    text += "Megatron-LM arguments:\n" +
            wrap_command(megatron_arguments(plan, report.global_batch, report.seq_len, &report.model_config), "  ",
                         "    ", kWidth);
  }
  const auto config = [&](const char* title, const FrameworkConfig& written, const char* option) {
    if (written.text.empty()) return fmt::format("{}: not written: {}\n", title, clip(fmt::format("{}", fmt::join(written.refusals, "; ")), 90));
    std::string lines = fmt::format("{} ({} FILE writes it):\n", title, option);
    std::istringstream input(written.text);
    for (std::string line; std::getline(input, line);) lines += clip("  " + line, kWidth) + "\n";
    return lines;
  };
  if (report.framework == step::Framework::kTorchtitan) {
    text += config("torchtitan job config", report.torchtitan, "--torchtitan-out");
  }
  if (report.framework == step::Framework::kMegatronBridge) {
    text += config("Megatron-Bridge recipe overrides", report.megatron_bridge, "--megatron-bridge-out");
  }
  if (report.framework == step::Framework::kDeepSpeed) {
    text += config("DeepSpeed config", report.deepspeed, "--deepspeed-out");
    for (const std::string& note : report.deepspeed.notes) text += wrap("  with it: " + note, "    ");
  }
  if (report.framework == step::Framework::kPyTorch && plan.pp > 1) {
    text += wrap(fmt::format("torch.distributed.pipelining runs {} from the order `pipeplan simulate --plan PLAN "
                             "--csv-out order.csv` writes (_PipelineScheduleRuntime), each stage's blocks as the split "
                             "above",
                             plan.schedule),
                 "  ");
  }
  return text;
}

}  // namespace

std::string folded_counts(const step::StageSplit& split) {
  const std::vector<int> counts = split.transformer_layer_counts();
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < counts.size();) {
    std::size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    runs.push_back(j - i > 1 ? fmt::format("{} x{}", counts[i], j - i) : std::to_string(counts[i]));
    i = j;
  }
  return fmt::format("{}", fmt::join(runs, ", "));
}

std::string plan_report_summary(const PlanReport& report) {
  const step::FrameworkInfo& kept_to = step::framework_info(report.framework);
  std::string text = fmt::format("{} on {} GPUs of {}: global batch {} x {} tokens, memory cap {}{}\n", report.model,
                                 report.gpus, report.hardware, report.global_batch, report.seq_len,
                                 format_bytes(report.search.memory_cap_bytes),
                                 report.framework == step::Framework::kAny
                                     ? ""
                                     : fmt::format(", within {} {}", kept_to.name, kept_to.version));
  for (const std::string& warning : report.search.warnings) text += wrap("warning: " + warning, "  ");
  text += headline(report);
  text += memory_table(report.best);
  text += '\n' + search_lines(report.search);
  text += fmt::format("\ntop {} (--verbose: the Pareto front, placement and every framework's config):\n",
                      report.search.ranked.size());
  text += top_table(report.search.ranked);
  const std::vector<PlanCandidate>& front = report.search.pareto;
  if (!front.empty()) {
    text += fmt::format("Pareto front (step time against peak memory): {} listed, down to {} at {:.0f} tokens/s "
                        "(--verbose lists them)\n",
                        front.size(), format_bytes(static_cast<double>(front.back().max_peak_bytes)),
                        front.back().tokens_per_s);
  }
  if (report.framework == step::Framework::kAny) text += "\nbest plan each framework runs:\n" + frameworks_table(report);
  text += '\n' + run_lines(report);
  return text;
}

}  // namespace pipeplan::planner
