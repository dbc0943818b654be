#include "validate/comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "common/units.h"
#include "sim/output/chrome_trace.h"

namespace pipeplan::validate {
namespace {

using Json = nlohmann::ordered_json;

struct RankTimes {
  double busy_s = 0, first_s = std::numeric_limits<double>::infinity(), last_s = 0;
  double span() const { return last_s > first_s ? last_s - first_s : 0; }
};

RankTimes rank_times(const std::vector<RunRecord>& records) {
  RankTimes times;
  for (const RunRecord& record : records) {
    if (!sim::is_compute(record.action.kind)) continue;
    times.busy_s += record.end_s - record.start_s;
    times.first_s = std::min(times.first_s, record.start_s);
    times.last_s = std::max(times.last_s, record.end_s);
  }
  return times;
}

// First compute start to last compute end over all ranks, as the simulator's makespan.
double makespan(const std::vector<RankResult>& measured, std::size_t iteration) {
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const RankResult& rank : measured) {
    const RankTimes times = rank_times(rank.iterations.at(iteration));
    first = std::min(first, times.first_s);
    last = std::max(last, times.last_s);
  }
  return last > first ? last - first : 0;
}

void add_gradient_figures(const std::vector<RankResult>& measured, Comparison& comparison) {
  for (const RankResult& rank : measured) {
    if (rank.gradients &&
        (!comparison.gradients || rank.gradients->max_relative_error > comparison.gradients->max_relative_error)) {
      const int parameters = comparison.gradients ? comparison.gradients->parameters : 0;
      comparison.gradients = rank.gradients;
      comparison.gradients->parameters += parameters;
    } else if (rank.gradients) {
      comparison.gradients->parameters += rank.gradients->parameters;
    }
    if (rank.gradients && rank.holds_loss) {
      comparison.loss_relative_error = std::abs(rank.loss - rank.reference_loss) /
                                       std::max(std::abs(rank.reference_loss), std::numeric_limits<double>::min());
    }
  }
}

Json measured_and_predicted(double measured, double predicted) {
  return {{"measured", measured}, {"predicted", predicted}, {"error_pct", error_pct(predicted, measured)}};
}

}  // namespace

bool gradients_passed(const Comparison& c) {
  if (!c.gradients) return true;
  return c.gradients->max_relative_error < c.gradients->tolerance &&
         c.loss_relative_error.value_or(0.0) < c.gradients->tolerance;
}

double error_pct(double predicted, double measured) {
  return measured != 0 ? (predicted - measured) / measured * 100 : 0;
}

Comparison compare_runs(const std::vector<RankResult>& measured, const step::ModelSimulation& predicted) {
  Comparison comparison;
  const sim::SimulationReport& report = predicted.report;
  comparison.schedule = report.schedule;
  comparison.ranks = report.ranks;
  comparison.microbatches = report.microbatches;
  comparison.cost_source = predicted.cost_source;
  const std::size_t iterations = measured.empty() ? 0 : measured.front().iterations.size();
  for (std::size_t i = 0; i < iterations; ++i) comparison.measured_iterations_s.push_back(makespan(measured, i));
  std::vector<std::size_t> order(iterations);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return comparison.measured_iterations_s[a] < comparison.measured_iterations_s[b];
  });
  const std::size_t median = iterations > 0 ? order[(iterations - 1) / 2] : 0;
  comparison.representative_iteration = static_cast<int>(median);
  if (iterations > 0) {
    const double low = comparison.measured_iterations_s[order[(iterations - 1) / 2]];
    const double high = comparison.measured_iterations_s[order[iterations / 2]];
    comparison.measured_iteration_s = (low + high) / 2;
  }
  comparison.predicted_iteration_s = report.makespan_s;
  comparison.iteration_error_pct = error_pct(comparison.predicted_iteration_s, comparison.measured_iteration_s);
  comparison.predicted_bubble_rate = report.bubble_rate;

  double busy_total = 0, cost = 0;
  for (const RankResult& rank : measured) {
    if (iterations == 0) break;
    const RankTimes times = rank_times(rank.iterations[median]);
    busy_total += times.busy_s;
    cost = std::max(cost, times.span());
    const sim::RankReport& simulated = report.ranks_detail.at(static_cast<std::size_t>(rank.rank));
    const step::MemoryBreakdown& memory = predicted.memory.at(static_cast<std::size_t>(rank.rank));
    RankComparison figures;
    figures.rank = rank.rank;
    figures.measured_busy_s = times.busy_s;
    figures.predicted_busy_s = simulated.busy_s;
    figures.predicted_idle_s = simulated.idle_s;
    figures.measured_activation_bytes = rank.peak_held_bytes;
    figures.predicted_activation_bytes = simulated.peak_activation_bytes;
    figures.measured_peak_bytes = rank.parameter_bytes + rank.peak_heap_bytes;
    figures.predicted_peak_bytes = rank.parameter_bytes + memory.activations + memory.logits + memory.buffers;
    comparison.rank_figures.push_back(figures);
  }
  const double ranks = static_cast<double>(measured.size());
  comparison.measured_bubble_rate = cost > 0 ? 1 - busy_total / (ranks * cost) : 0;
  comparison.bubble_error_points = (comparison.predicted_bubble_rate - comparison.measured_bubble_rate) * 100;
  // Idle against the iteration (the largest rank span), as the simulator
  // counts it: the ranks' idle times sum to the bubble.
  for (RankComparison& figures : comparison.rank_figures) {
    figures.measured_idle_s = std::max(0.0, cost - figures.measured_busy_s);
  }
  add_gradient_figures(measured, comparison);
  return comparison;
}

std::string comparison_json(const Comparison& c) {
  Json ranks = Json::array();
  for (const RankComparison& r : c.rank_figures) {
    ranks.push_back(
        {{"rank", r.rank},
         {"busy_s", measured_and_predicted(r.measured_busy_s, r.predicted_busy_s)},
         {"idle_s", measured_and_predicted(r.measured_idle_s, r.predicted_idle_s)},
         {"peak_activation_bytes", measured_and_predicted(static_cast<double>(r.measured_activation_bytes),
                                                          static_cast<double>(r.predicted_activation_bytes))},
         {"peak_memory_bytes", measured_and_predicted(static_cast<double>(r.measured_peak_bytes),
                                                      static_cast<double>(r.predicted_peak_bytes))}});
  }
  Json json = {{"plan", c.plan},
               {"schedule", c.schedule},
               {"backend", c.backend},
               {"ranks", c.ranks},
               {"microbatches", c.microbatches},
               {"cost_source", c.cost_source},
               {"measured_iteration_s", c.measured_iteration_s},
               {"predicted_iteration_s", c.predicted_iteration_s},
               {"iteration_error_pct", c.iteration_error_pct},
               {"measured_bubble_rate", c.measured_bubble_rate},
               {"predicted_bubble_rate", c.predicted_bubble_rate},
               {"bubble_error_points", c.bubble_error_points},
               {"notes", c.notes},
               {"settings", c.settings},
               {"measured_iterations_s", c.measured_iterations_s},
               {"representative_iteration", c.representative_iteration},
               {"per_rank", std::move(ranks)}};
  if (c.gradients) {
    json["gradient_check"] = {{"parameters", c.gradients->parameters},
                              {"max_relative_error", c.gradients->max_relative_error},
                              {"worst_parameter", c.gradients->worst_parameter},
                              {"loss_relative_error", c.loss_relative_error.value_or(0.0)},
                              {"tolerance", c.gradients->tolerance},
                              {"passed", gradients_passed(c)}};
  }
  return json.dump(2) + "\n";
}

std::string comparison_summary(const Comparison& c) {
  std::string text = fmt::format(
      "{} on {} {} ranks, {} micro-batches ({})\niteration: measured {:.2f} ms (median of {}), predicted {:.2f} ms, "
      "error {:+.1f}%\nbubble rate: measured {:.3f}, predicted {:.3f}, error {:+.1f} points\n",
      c.schedule, c.ranks, c.backend, c.microbatches, c.cost_source, c.measured_iteration_s * 1e3,
      c.measured_iterations_s.size(), c.predicted_iteration_s * 1e3, c.iteration_error_pct, c.measured_bubble_rate,
      c.predicted_bubble_rate, c.bubble_error_points);
  for (const std::string& note : c.notes) text += fmt::format("note: {}\n", note);
  text += fmt::format("{:>4} {:>21} {:>21} {:>25} {:>25}\n", "rank", "busy ms meas/pred", "idle ms meas/pred",
                      "activations meas/pred", "peak memory meas/pred");
  for (const RankComparison& r : c.rank_figures) {
    text += fmt::format("{:>4} {:>10.2f}/{:<10.2f} {:>10.2f}/{:<10.2f} {:>12}/{:<12} {:>12}/{:<12}\n", r.rank,
                        r.measured_busy_s * 1e3, r.predicted_busy_s * 1e3, r.measured_idle_s * 1e3,
                        r.predicted_idle_s * 1e3, format_bytes(r.measured_activation_bytes),
                        format_bytes(r.predicted_activation_bytes), format_bytes(r.measured_peak_bytes),
                        format_bytes(r.predicted_peak_bytes));
  }
  if (c.gradients) {
    text += fmt::format(
        "gradients vs unpipelined reference: {} ({} parameters, worst {} at {:.2e}; loss {:.2e}; tolerance {:.0e})\n",
        gradients_passed(c) ? "match" : "DIFFER", c.gradients->parameters, c.gradients->worst_parameter,
        c.gradients->max_relative_error, c.loss_relative_error.value_or(0.0), c.gradients->tolerance);
  }
  return text;
}

std::string combined_trace_json(const std::vector<RankResult>& measured, const Comparison& comparison,
                                const sim::SimulationReport& predicted) {
  // The measured iteration as a report the trace writer understands.
  sim::SimulationReport real = predicted;
  real.timeline = sim::Timeline{};
  for (const RankResult& rank : measured) {
    for (const RunRecord& record : rank.iterations.at(static_cast<std::size_t>(comparison.representative_iteration))) {
      if (sim::is_compute(record.action.kind)) {
        real.timeline->computes.push_back({rank.rank, record.action, record.start_s, record.end_s});
      } else {
        real.timeline->comm_waits.push_back({rank.rank, record.action, record.start_s, record.end_s});
      }
    }
  }
  real.makespan_s = comparison.measured_iteration_s;
  real.bubble_rate = comparison.measured_bubble_rate;
  Json trace = Json::parse(sim::chrome_trace_json(real));
  Json simulated = Json::parse(sim::chrome_trace_json(predicted));
  for (Json& event : trace["traceEvents"]) {
    if (event.value("name", "") == "process_name") {
      event["args"]["name"] = fmt::format("measured rank {}", event["pid"].get<int>());
    }
  }
  for (Json& event : simulated["traceEvents"]) {
    const int rank = event["pid"].get<int>();
    event["pid"] = rank + comparison.ranks;
    if (event.value("name", "") == "process_name") event["args"]["name"] = fmt::format("simulated rank {}", rank);
    if (event.value("name", "") == "process_sort_index") event["args"]["sort_index"] = rank + comparison.ranks;
    if (event.contains("id")) event["id"] = fmt::format("sim-{}", event["id"].dump());
    trace["traceEvents"].push_back(std::move(event));
  }
  trace["otherData"] = {{"measured", trace["otherData"]}, {"simulated", simulated["otherData"]}};
  return trace.dump();
}

}  // namespace pipeplan::validate
