#include "planner/serve/serve_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "common/error.h"
#include "common/parallel.h"
#include "common/units.h"
#include "models/serving_costs.h"
#include "models/time_model.h"
#include "planner/serve/serving_step_costs.h"

namespace pipeplan::planner {
namespace {

// Bisection steps of the highest-rate search: the rate to 1 part in 2^10
// of the saturated rate.
constexpr int kRateSteps = 10;

bool divides_heads(const models::ModelConfig& model, int tp) {
  try {
    models::check_tensor_parallel(model, tp);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// The axes the options fix, as given: "--tp 8 --replicas 2" (empty: none).
std::string fixed_axes(const ServeOptions& options) {
  std::string fixed;
  for (const auto& [axis, name] : {std::pair{options.tp, "--tp"}, std::pair{options.pp, "--pp"},
                                   std::pair{options.replicas, "--replicas"}}) {
    if (axis) fixed += fmt::format("{}{} {}", fixed.empty() ? "" : " ", name, *axis);
  }
  return fixed;
}

// Every t x p x replicas = gpus the options leave open: t dividing the heads
// and within an NVLink domain (unless fixed), p up to the layers.
std::vector<ServeCandidate> layouts(const ServeOptions& options) {
  std::vector<ServeCandidate> result;
  for (int tp = 1; tp <= options.gpus; ++tp) {
    if (options.gpus % tp != 0 || (options.tp && *options.tp != tp)) continue;
    if (!options.tp && (tp > options.hardware.local_gpus() || !divides_heads(options.model, tp))) continue;
    for (int pp = 1; pp <= options.gpus / tp && pp <= options.model.layers; ++pp) {
      if ((options.gpus / tp) % pp != 0 || (options.pp && *options.pp != pp)) continue;
      const int replicas = options.gpus / (tp * pp);
      if (options.replicas && *options.replicas != replicas) continue;
      ServeCandidate candidate;
      candidate.tp = tp;
      candidate.pp = pp;
      candidate.replicas = replicas;
      result.push_back(candidate);
    }
  }
  if (result.empty()) {
    throw InputError(fmt::format("--gpus {}: no layout t x p x replicas = {} matches {}", options.gpus, options.gpus,
                                 fixed_axes(options)));
  }
  return result;
}

models::ServingLayout serving_layout(const ServeOptions& options, const ServeCandidate& candidate) {
  models::ServingLayout layout;
  layout.tp = candidate.tp;
  layout.stage_layers = models::even_stage_layers(options.model.layers, candidate.pp);
  layout.fp8_weights = options.fp8_weights;
  layout.kv_element_bytes = options.fp8_kv ? 1 : 2;
  return layout;
}

// Each GPU's budget less weights and workspace is its stage's KV cache; the
// pipeline holds as many tokens as its tightest stage.
void size_memory(const ServeOptions& options, const models::ServingStepModel& model, ServeCandidate& candidate) {
  const models::GpuSpec& gpu = options.hardware.gpu;
  candidate.budget_bytes = std::min(gpu.usable_memory_bytes(), static_cast<std::int64_t>(std::floor(
                                                                    options.memory_utilization * static_cast<double>(gpu.memory_bytes))));
  std::int64_t tokens = std::numeric_limits<std::int64_t>::max();
  for (int s = 0; s < model.stages(); ++s) {
    StageMemory memory;
    memory.layers = model.layout().stage_layers[static_cast<std::size_t>(s)];
    memory.weights = model.weight_bytes(s);
    memory.workspace = model.workspace_bytes(s, options.limits.max_batch_tokens, options.limits.max_sequences);
    memory.kv_cache = candidate.budget_bytes - memory.weights - memory.workspace;
    memory.kv_tokens = std::max<std::int64_t>(0, memory.kv_cache) / model.kv_bytes_per_token(s);
    tokens = std::min(tokens, memory.kv_tokens);
    candidate.stages.push_back(memory);
  }
  candidate.kv_blocks = tokens / options.limits.block_tokens;
  const auto tightest = std::min_element(candidate.stages.begin(), candidate.stages.end(),
                                         [](const StageMemory& a, const StageMemory& b) { return a.kv_cache < b.kv_cache; });
  if (tightest->kv_cache <= 0) {
    candidate.unfit = fmt::format("weights {} and workspace {} of a {} budget leave no KV cache",
                                  format_bytes(static_cast<double>(tightest->weights)),
                                  format_bytes(static_cast<double>(tightest->workspace)),
                                  format_bytes(static_cast<double>(candidate.budget_bytes)));
  }
}

std::int64_t longest_request(const ServeOptions& options) {
  std::int64_t longest = 0;
  for (const sim::ServingRequest& request : options.workload.trace) {
    longest = std::max<std::int64_t>(longest, std::int64_t{request.prompt_tokens} + request.output_tokens);
  }
  if (options.workload.trace.empty()) {
    longest = std::int64_t{options.workload.prompt.high} + options.workload.output.high;
  }
  return longest;
}

// The requests for one run at `rate` (0: a closed loop's), dealt to the
// replicas in turn; a closed loop's clients dealt the same way.
std::vector<sim::ServingWorkload> replica_workloads(const ServeOptions& options, int replicas, double rate) {
  const ServeWorkload& spec = options.workload;
  const std::vector<sim::ServingRequest> requests =
      !spec.trace.empty() ? spec.trace : sim::draw_requests(spec.requests, rate, spec.prompt, spec.output, spec.seed);
  std::vector<sim::ServingWorkload> result(static_cast<std::size_t>(replicas));
  int active = replicas;
  if (spec.concurrency > 0) {
    active = std::min(replicas, spec.concurrency);
    for (int k = 0; k < active; ++k) {
      result[static_cast<std::size_t>(k)].concurrency = spec.concurrency / replicas + (k < spec.concurrency % replicas ? 1 : 0);
    }
  }
  for (std::size_t i = 0; i < requests.size(); ++i) result[i % static_cast<std::size_t>(active)].requests.push_back(requests[i]);
  return result;
}

sim::ServingSummary simulate(const ServeOptions& options, models::ServingStepModel& model, ServeCandidate& candidate,
                             double rate, bool spans) {
  sim::SchedulerLimits limits = options.limits;
  limits.kv_blocks = candidate.kv_blocks;
  const std::vector<sim::ServingWorkload> workloads = replica_workloads(options, candidate.replicas, rate);
  std::vector<sim::ServingRun> runs;
  for (std::size_t k = 0; k < workloads.size(); ++k) {
    if (workloads[k].requests.empty()) continue;
    model.set_first_gpu(static_cast<long long>(k) * candidate.tp * candidate.pp);
    const ServingStepCosts costs(model);
    runs.push_back(sim::simulate_serving(workloads[k], costs, limits, spans));
    for (sim::StageSpan& span : runs.back().spans) span.replica = static_cast<int>(k);
    if (spans) candidate.spans.insert(candidate.spans.end(), runs.back().spans.begin(), runs.back().spans.end());
  }
  return sim::summarize_serving(runs);
}

bool meets(const ServeOptions& options, const sim::ServingSummary& summary) {
  return (!options.ttft_p99_s || summary.ttft_s.p99 <= *options.ttft_p99_s) &&
         (!options.tpot_p99_s || summary.tpot_s.p99 <= *options.tpot_p99_s);
}

// The highest Poisson rate at which the targets hold, by bisection below
// the rate a saturated pipeline completes requests at.
void highest_rate(const ServeOptions& options, models::ServingStepModel& model, ServeCandidate& candidate) {
  ServeOptions saturated = options;
  saturated.workload.concurrency =
      candidate.replicas * options.limits.max_sequences * std::max(options.limits.in_flight, candidate.pp);
  const double ceiling = simulate(saturated, model, candidate, 0, false).requests_per_s;
  double low = 0, high = ceiling * 1.25;
  sim::ServingSummary at_low;
  sim::ServingSummary at_high = simulate(options, model, candidate, high, false);
  if (meets(options, at_high)) {
    candidate.rate = high;
    candidate.summary = at_high;
    candidate.meets = true;
    return;
  }
  for (int step = 0; step < kRateSteps; ++step) {
    const double middle = 0.5 * (low + high);
    sim::ServingSummary summary = simulate(options, model, candidate, middle, false);
    if (meets(options, summary)) {
      low = middle;
      at_low = std::move(summary);
    } else {
      high = middle;
      at_high = std::move(summary);
    }
  }
  candidate.meets = low > 0;
  candidate.rate = candidate.meets ? low : 0;
  candidate.summary = candidate.meets ? at_low : at_high;
}

void evaluate(const ServeOptions& options, ServeMode mode, ServeCandidate& candidate) {
  models::ServingStepModel model(options.model, options.hardware, serving_layout(options, candidate));
  size_memory(options, model, candidate);
  if (!candidate.unfit.empty()) return;
  const std::int64_t longest = longest_request(options) - 1;
  if (longest > candidate.kv_blocks * options.limits.block_tokens) {
    candidate.unfit = fmt::format("its KV cache holds {} tokens, under the longest request's {}",
                                  candidate.kv_blocks * options.limits.block_tokens, longest);
    return;
  }
  if (mode == ServeMode::kHighestRate) {
    highest_rate(options, model, candidate);
    return;
  }
  candidate.rate = options.workload.rate.value_or(0);
  candidate.summary = simulate(options, model, candidate, candidate.rate, false);
  candidate.meets = meets(options, candidate.summary);
}

void rank(ServeMode mode, std::vector<ServeCandidate>& candidates) {
  const auto runnable_first = [](const ServeCandidate& a, const ServeCandidate& b) {
    if (a.unfit.empty() != b.unfit.empty()) return a.unfit.empty();
    return a.meets && !b.meets;
  };
  // A plan keeping up with a given rate delivers what arrives: those within
  // 1 % of the most throughput are ranked by end-to-end latency.
  double most = 0;
  for (const ServeCandidate& c : candidates) {
    if (c.unfit.empty()) most = std::max(most, c.summary.output_tokens_per_s);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [&](const ServeCandidate& a, const ServeCandidate& b) {
    if (runnable_first(a, b)) return true;
    if (runnable_first(b, a)) return false;
    if (!a.unfit.empty()) return false;
    switch (mode) {
      case ServeMode::kHighestRate: return a.rate > b.rate;
      case ServeMode::kClosedLoop: return a.summary.output_tokens_per_s > b.summary.output_tokens_per_s;
      case ServeMode::kAtRate:
      case ServeMode::kTrace: {
        const bool a_keeps = a.summary.output_tokens_per_s >= 0.99 * most;
        const bool b_keeps = b.summary.output_tokens_per_s >= 0.99 * most;
        if (a_keeps != b_keeps) return a_keeps;
        return a_keeps ? a.summary.e2e_s.p99 < b.summary.e2e_s.p99
                       : a.summary.output_tokens_per_s > b.summary.output_tokens_per_s;
      }
    }
    return false;
  });
}

std::string targets_text(const ServeOptions& options) {
  std::string text;
  if (options.ttft_p99_s) text += fmt::format("--ttft-p99 {}", format_duration(*options.ttft_p99_s));
  if (options.tpot_p99_s) text += fmt::format("{}--tpot-p99 {}", text.empty() ? "" : " and ", format_duration(*options.tpot_p99_s));
  return text;
}

// No layout meets the targets: name the best p99s any reached.
[[noreturn]] void throw_unmet(const ServeOptions& options, ServeMode mode, const std::vector<ServeCandidate>& candidates) {
  const ServeCandidate* ttft = nullptr;
  const ServeCandidate* tpot = nullptr;
  for (const ServeCandidate& c : candidates) {
    if (!c.unfit.empty()) continue;
    if (!ttft || c.summary.ttft_s.p99 < ttft->summary.ttft_s.p99) ttft = &c;
    if (!tpot || c.summary.tpot_s.p99 < tpot->summary.tpot_s.p99) tpot = &c;
  }
  const std::string where = mode == ServeMode::kHighestRate ? "at any rate"
                            : mode == ServeMode::kClosedLoop
                                ? fmt::format("at concurrency {}", options.workload.concurrency)
                            : mode == ServeMode::kTrace ? "on the trace"
                                                        : fmt::format("at {:g} requests/s", *options.workload.rate);
  throw InputError(fmt::format("no layout meets {} {}: the best reached are p99 TTFT {} ({}) and p99 TPOT {} ({}); "
                               "relax the targets, lower the load or add GPUs",
                               targets_text(options), where, format_duration(ttft->summary.ttft_s.p99), layout_name(*ttft),
                               format_duration(tpot->summary.tpot_s.p99), layout_name(*tpot)));
}

// Nothing runs: name the layout that came closest (the most KV cache left).
[[noreturn]] void throw_unfit(const ServeOptions& options, const std::vector<ServeCandidate>& candidates) {
  const auto left = [](const ServeCandidate& c) {
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    for (const StageMemory& stage : c.stages) least = std::min(least, stage.kv_cache);
    return least;
  };
  const ServeCandidate& closest = *std::max_element(
      candidates.begin(), candidates.end(), [&](const ServeCandidate& a, const ServeCandidate& b) { return left(a) < left(b); });
  const std::string fixed = fixed_axes(options);
  throw InputError(fmt::format("{} does not serve on {} x {} at {}: at {}, {}; {}add GPUs, or use --weights fp8 or "
                               "--kv-cache fp8",
                               options.model.name, options.gpus, options.hardware.name,
                               fixed.empty() ? "any layout" : "the layouts " + fixed + " leaves", layout_name(closest),
                               closest.unfit, fixed.empty() ? "" : "free " + fixed + ", "));
}

void check_options(const ServeOptions& options, ServeMode mode) {
  if (options.gpus < 1) throw InputError("--gpus must be at least 1");
  for (const auto& [axis, name] : {std::pair{options.tp, "--tp"}, std::pair{options.pp, "--pp"},
                                   std::pair{options.replicas, "--replicas"}}) {
    if (axis && *axis < 1) throw InputError(fmt::format("{}: {} is below 1", name, *axis));
  }
  if (!(options.memory_utilization > 0 && options.memory_utilization <= 1)) {
    throw InputError(fmt::format("--gpu-memory-utilization: {} is outside (0, 1]", options.memory_utilization));
  }
  if (options.workload.rate && !(*options.workload.rate > 0 && std::isfinite(*options.workload.rate))) {
    throw InputError(fmt::format("--rate: {} is not a rate above 0 requests per second", *options.workload.rate));
  }
  if (options.workload.rate && options.workload.trace.empty()) {
    // Arrivals over more simulated time than any duration pipeplan reads
    // (10^7 s, about 116 days) would print 300-digit spans.
    const double span_s = options.workload.requests / *options.workload.rate;
    if (span_s > kMaxDurationS) {
      throw InputError(fmt::format("--rate {}: {} requests would arrive over {}, past the {} a run may span; raise "
                                   "--rate or draw fewer --requests",
                                   *options.workload.rate, options.workload.requests, format_duration(span_s),
                                   format_duration(kMaxDurationS)));
    }
  }
  for (const auto& [target, name] : {std::pair{options.ttft_p99_s, "--ttft-p99"}, std::pair{options.tpot_p99_s, "--tpot-p99"}}) {
    if (target && !(*target > 0)) throw InputError(fmt::format("{}: a latency target must be above 0", name));
  }
  if (mode == ServeMode::kHighestRate && !options.ttft_p99_s && !options.tpot_p99_s) {
    throw InputError("give the load (--rate, --concurrency or --request-trace), or latency targets (--ttft-p99, "
                     "--tpot-p99) to find the highest rate that meets them");
  }
  if (options.fp8_weights && !(options.hardware.gpu.peak_flops_fp8 > 0)) {
    throw InputError(fmt::format("--weights fp8: {} has no FP8 rate (gpu.peak_flops.fp8); use --weights bf16",
                                 options.hardware.name));
  }
  const std::vector<sim::ServingRequest>& trace = options.workload.trace;
  for (std::size_t r = 0; r < trace.size(); ++r) {
    if (std::int64_t{trace[r].prompt_tokens} + trace[r].output_tokens > options.model.context) {
      throw InputError(fmt::format("--request-trace: request {} of the trace has {} prompt and {} output tokens, over "
                                   "{}'s context of {}",
                                   r + 1, trace[r].prompt_tokens, trace[r].output_tokens, options.model.name,
                                   options.model.context));
    }
  }
  const std::int64_t longest = longest_request(options);
  if (longest > options.model.context) {
    throw InputError(fmt::format("a request of {} tokens (prompt and output) is longer than {}'s context of {}; "
                                 "shorten --prompt-tokens or --output-tokens",
                                 longest, options.model.name, options.model.context));
  }
}

ServeMode serve_mode(const ServeOptions& options) {
  if (!options.workload.trace.empty()) return ServeMode::kTrace;
  if (options.workload.concurrency > 0) return ServeMode::kClosedLoop;
  if (options.workload.rate) return ServeMode::kAtRate;
  return ServeMode::kHighestRate;
}

}  // namespace

std::string layout_name(const ServeCandidate& c) {
  return c.replicas > 1 ? fmt::format("t={} p={} x{}", c.tp, c.pp, c.replicas) : fmt::format("t={} p={}", c.tp, c.pp);
}

ServePlan plan_serving(const ServeOptions& options) {
  ServePlan plan;
  plan.mode = serve_mode(options);
  check_options(options, plan.mode);
  plan.candidates = layouts(options);
  std::mutex progress;
  std::size_t done = 0;
  parallel_for(plan.candidates.size(), options.threads, [&](std::size_t i) {
    evaluate(options, plan.mode, plan.candidates[i]);
    const std::lock_guard<std::mutex> lock(progress);
    report(options.progress, ++done, plan.candidates.size(), layout_name(plan.candidates[i]));
  });
  rank(plan.mode, plan.candidates);
  if (!plan.candidates.front().unfit.empty()) throw_unfit(options, plan.candidates);
  if ((options.ttft_p99_s || options.tpot_p99_s) && !plan.candidates.front().meets) throw_unmet(options, plan.mode, plan.candidates);
  if (options.record_spans) {
    ServeCandidate& chosen = plan.candidates.front();
    models::ServingStepModel model(options.model, options.hardware, serving_layout(options, chosen));
    simulate(options, model, chosen, chosen.rate, true);
  }
  return plan;
}

}  // namespace pipeplan::planner
