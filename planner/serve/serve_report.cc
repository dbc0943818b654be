#include "planner/serve/serve_report.h"

#include <fmt/format.h>

#include <set>
#include <utility>

#include "common/text_wrap.h"
#include "common/units.h"
#include "planner/serve/serve_args.h"

namespace pipeplan::planner {
namespace {

std::string length_text(const sim::LengthRange& range) {
  return range.low == range.high ? std::to_string(range.low) : fmt::format("{} to {}", range.low, range.high);
}

std::string workload_text(const ServeOptions& options, ServeMode mode) {
  const ServeWorkload& w = options.workload;
  if (mode == ServeMode::kTrace) return fmt::format("{} from the trace", format_plural(static_cast<long long>(w.trace.size()), "request"));
  const std::string lengths = fmt::format("{} of {} prompt and {} output tokens", format_plural(w.requests, "request"),
                                          length_text(w.prompt), length_text(w.output));
  switch (mode) {
    case ServeMode::kClosedLoop:
      return fmt::format("{}, {} in a closed loop", lengths, format_plural(w.concurrency, "client"));
    case ServeMode::kAtRate: return fmt::format("{}, Poisson arrivals at {:g}/s (seed {})", lengths, *w.rate, w.seed);
    default: return fmt::format("{}, Poisson arrivals (seed {}) at the highest rate meeting the targets", lengths, w.seed);
  }
}

std::string ms(double seconds) { return format_duration(seconds); }

nlohmann::ordered_json percentiles_json(const sim::Percentiles& p) {
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

nlohmann::ordered_json summary_json(const sim::ServingSummary& s) {
  nlohmann::ordered_json json{{"requests", s.requests},
                              {"duration_s", s.duration_s},
                              {"requests_per_s", s.requests_per_s},
                              {"output_tokens_per_s", s.output_tokens_per_s},
                              {"total_tokens_per_s", s.total_tokens_per_s},
                              {"ttft_s", percentiles_json(s.ttft_s)},
                              {"tpot_s", percentiles_json(s.tpot_s)},
                              {"itl_s", percentiles_json(s.itl_s)},
                              {"e2e_s", percentiles_json(s.e2e_s)},
                              {"kv_mean_use", s.kv_mean_use},
                              {"kv_peak_use", s.kv_peak_use},
                              {"bubble", s.bubble},
                              {"stage_idle", s.stage_idle},
                              {"preemptions", s.preemptions},
                              {"mean_batch_tokens", s.mean_batch_tokens}};
  return json;
}

nlohmann::ordered_json candidate_json(const ServeCandidate& c, bool targets) {
  nlohmann::ordered_json entry{{"tp", c.tp}, {"pp", c.pp}, {"replicas", c.replicas}, {"runs", c.unfit.empty()}};
  if (!c.unfit.empty()) entry["why_not"] = c.unfit;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageMemory& m : c.stages) {
    stages.push_back({{"layers", m.layers},
                      {"weight_bytes", m.weights},
                      {"workspace_bytes", m.workspace},
                      {"kv_cache_bytes", m.kv_cache},
                      {"kv_tokens", m.kv_tokens}});
  }
  entry["memory_budget_bytes"] = c.budget_bytes;
  entry["stages"] = stages;
  entry["kv_blocks"] = c.kv_blocks;
  if (c.unfit.empty()) {
    entry["rate"] = c.rate;
    entry["meets_targets"] = targets ? nlohmann::ordered_json(c.meets) : nlohmann::ordered_json(nullptr);
    entry["metrics"] = summary_json(c.summary);
  }
  return entry;
}

// In the highest-rate search the rate found (none where the targets are
// missed at every rate, the figures then at the lowest rate tried);
// otherwise the requests completed per second.
std::string candidate_row(const ServeCandidate& c, ServeMode mode) {
  if (!c.unfit.empty()) return fmt::format("  {:<16} does not run: {}\n", layout_name(c), c.unfit);
  const sim::ServingSummary& s = c.summary;
  const std::string rate = mode != ServeMode::kHighestRate ? fmt::format("{:.3g}", s.requests_per_s)
                           : c.meets                       ? fmt::format("{:.3g}", c.rate)
                                                           : "none";
  return fmt::format("  {:<16} {:>8} {:>10.1f} {:>10} {:>10} {:>9} {:>9} {:>6.1f}% {:>6.1f}%{}\n", layout_name(c), rate,
                     s.output_tokens_per_s, ms(s.ttft_s.p50), ms(s.ttft_s.p99), ms(s.tpot_s.p50), ms(s.tpot_s.p99),
                     100 * s.bubble, 100 * s.kv_mean_use, c.meets ? "" : "  misses");
}

std::string percentile_line(const char* name, const sim::Percentiles& p) {
  return fmt::format("  {:<5} mean {}  p50 {}  p90 {}  p99 {}\n", name, ms(p.mean), ms(p.p50), ms(p.p90), ms(p.p99));
}

}  // namespace

std::string serve_text(const ServeOptions& options, const ServePlan& plan) {
  const ServeCandidate& best = plan.candidates.front();
  std::string text = fmt::format("{} on {} x {}: {}\n", options.model.name, options.gpus, options.hardware.name,
                                 workload_text(options, plan.mode));
  if (options.ttft_p99_s || options.tpot_p99_s) {
    text += fmt::format("targets: p99 TTFT {}, p99 TPOT {}\n", options.ttft_p99_s ? ms(*options.ttft_p99_s) : "any",
                        options.tpot_p99_s ? ms(*options.tpot_p99_s) : "any");
  }
  text += fmt::format("\n  {:<16} {:>8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7} {:>7}\n", "layout",
                      plan.mode == ServeMode::kHighestRate ? "rate/s" : "req/s", "out tok/s", "TTFT p50", "TTFT p99",
                      "TPOT p50", "TPOT p99", "bubble", "KV use");
  for (const ServeCandidate& c : plan.candidates) text += candidate_row(c, plan.mode);
  if (plan.mode == ServeMode::kHighestRate) {
    text += fmt::format("  (each rate from {} at it: a run this short overstates what a long one sustains)\n",
                        format_plural(options.workload.requests, "request"));
  }
  text += fmt::format("\nbest: {}; each GPU's {} holds its stage's weights and workspace, the rest is KV cache\n",
                      layout_name(best), format_bytes(static_cast<double>(best.budget_bytes)));
  text += fmt::format("  {:<6} {:>7} {:>11} {:>11} {:>11} {:>11}\n", "stage", "layers", "weights", "workspace",
                      "KV cache", "KV tokens");
  for (std::size_t s = 0; s < best.stages.size(); ++s) {
    const StageMemory& m = best.stages[s];
    text += fmt::format("  {:<6} {:>7} {:>11} {:>11} {:>11} {:>11}\n", s, m.layers, format_bytes(static_cast<double>(m.weights)),
                        format_bytes(static_cast<double>(m.workspace)), format_bytes(static_cast<double>(m.kv_cache)),
                        format_count(static_cast<double>(m.kv_tokens)));
  }
  const sim::ServingSummary& s = best.summary;
  text += fmt::format("  {:.4g} requests/s, {:.1f} output tokens/s ({:.1f} with prompts) over {}\n", s.requests_per_s,
                      s.output_tokens_per_s, s.total_tokens_per_s, format_duration(s.duration_s));
  text += percentile_line("TTFT", s.ttft_s) + percentile_line("TPOT", s.tpot_s) + percentile_line("ITL", s.itl_s) +
          percentile_line("E2E", s.e2e_s);
  text += fmt::format("  KV cache {:.1f} % used on average, {:.1f} % at peak; {} preemptions; {:.1f} tokens per batch; "
                      "pipeline bubble {:.1f} %\n",
                      100 * s.kv_mean_use, 100 * s.kv_peak_use, s.preemptions, s.mean_batch_tokens, 100 * s.bubble);
  const ServeCommands commands = serve_commands(options, best);
  text += "\nrun it:\n" + wrap_command(commands.vllm, "  ", "      ") + wrap_command(commands.sglang, "  ", "      ") +
          wrap_command(commands.trtllm, "  ", "      ");
  if (!commands.trtllm_note.empty()) text += wrap("  (" + commands.trtllm_note + ")", "   ");
  text += "assumed: no host time between steps (CUDA graphs, an overlapped scheduler); even layer split (vLLM's)\n";
  return text;
}

nlohmann::ordered_json serve_json(const ServeOptions& options, const ServePlan& plan) {
  static constexpr const char* kModes[] = {"rate", "closed_loop", "trace", "highest_rate"};
  nlohmann::ordered_json json;
  json["model"] = options.model.name;
  json["hardware"] = options.hardware.name;
  json["gpus"] = options.gpus;
  json["mode"] = kModes[static_cast<int>(plan.mode)];
  json["targets"] = {{"ttft_p99_s", options.ttft_p99_s ? nlohmann::ordered_json(*options.ttft_p99_s) : nullptr},
                     {"tpot_p99_s", options.tpot_p99_s ? nlohmann::ordered_json(*options.tpot_p99_s) : nullptr}};
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  const bool targets = options.ttft_p99_s || options.tpot_p99_s;
  for (const ServeCandidate& c : plan.candidates) candidates.push_back(candidate_json(c, targets));
  json["best"] = candidates.front();
  json["candidates"] = candidates;
  const ServeCommands commands = serve_commands(options, plan.candidates.front());
  json["commands"] = {{"vllm", commands.vllm}, {"sglang", commands.sglang}, {"trtllm", commands.trtllm},
                      {"trtllm_note", commands.trtllm_note}};
  nlohmann::ordered_json kv = nlohmann::ordered_json::array();
  for (const auto& [time, share] : plan.candidates.front().summary.kv_use) kv.push_back({time, share});
  json["kv_use_over_time"] = kv;
  return json;
}

std::string serving_trace_json(const std::vector<sim::StageSpan>& spans) {
  nlohmann::json events = nlohmann::json::array();
  std::set<int> replicas;
  std::set<std::pair<int, int>> stages;  // (replica, stage)
  for (const sim::StageSpan& span : spans) {
    if (replicas.insert(span.replica).second) {
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", span.replica},
                        {"args", {{"name", fmt::format("replica {}", span.replica)}}}});
    }
    if (stages.insert({span.replica, span.stage}).second) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", span.replica}, {"tid", span.stage},
                        {"args", {{"name", fmt::format("stage {}", span.stage)}}}});
    }
    events.push_back({{"name", fmt::format("batch {}", span.batch)},
                      {"ph", "X"},
                      {"pid", span.replica},
                      {"tid", span.stage},
                      {"ts", span.start_s * 1e6},
                      {"dur", (span.end_s - span.start_s) * 1e6},
                      {"args", {{"tokens", span.tokens}, {"sequences", span.sequences}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace pipeplan::planner
