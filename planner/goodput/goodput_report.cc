#include "planner/goodput/goodput_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/text_wrap.h"
#include "common/units.h"

namespace pipeplan::planner {
namespace {

std::string distribution_name(double shape) {
  return shape == 1 ? "exponential" : fmt::format("Weibull, shape {:g}", shape);
}

}  // namespace

std::string goodput_text(const GoodputReport& report) {
  const RunInputs& in = report.inputs;
  const GoodputEstimate& e = report.estimate;
  const CheckpointCost& c = in.checkpoint;
  const models::ReliabilityConfig& r = in.reliability;
  std::string text = report.heading + "\n";
  text += fmt::format("  step                {:>12}   {} tokens/s without failures\n", format_duration(in.step_s),
                      format_count(in.tokens_per_step / in.step_s));
  text += fmt::format("  failures            {:>12}   job MTBF: {} GPUs at {:.0f} h each, {} nodes at {:.0f} h each\n",
                      format_duration(e.job_mtbf_s), in.gpus, r.gpu_mtbf_s / 3600, in.nodes, r.node_mtbf_s / 3600);
  if (!r.causes.empty()) {
    std::vector<std::string> causes;
    for (const models::FailureCause& cause : r.causes) {
      causes.push_back(fmt::format("{} {:.1f} %{}", cause.name, 100 * cause.share, cause.takes_node_out ? "" : " (node stays)"));
    }
    text += fmt::format("                                   by cause: {}\n", fmt::join(causes, ", "));
  }
  text += fmt::format("  checkpoint          {:>12}   {} of weights and optimizer state, {} written per GPU, {}\n",
                      format_duration(in.asynchronous ? e.stall_s : c.write_s), format_bytes(c.state_bytes),
                      format_bytes(c.write_bytes_per_gpu),
                      in.asynchronous ? fmt::format("snapshot to host memory ({} a node), written behind in {}",
                                                    format_bytes(c.snapshot_bytes_per_node), format_duration(c.write_s))
                                      : "a synchronous save");
  text += fmt::format("  restart             {:>12}   relaunch {}, set-up {}, load {}, {} warm-up step{}\n",
                      format_duration(e.restart_s), format_duration(r.relaunch_s), format_duration(r.init_s), format_duration(c.read_s),
                      r.warmup_steps, r.warmup_steps == 1 ? "" : "s");
  text += fmt::format("  interval            {:>12}   every {} steps; optimum: Young {}, Daly {}\n",
                      format_duration(e.interval_s), e.interval_steps, format_duration(e.young_s), format_duration(e.daly_s));
  text += fmt::format("  goodput             {:>11.2f} %   {} tokens/s; checkpoints {:.2f} % of the time, {} lost per "
                      "failure (restart and work redone)\n",
                      100 * e.goodput, format_count(e.effective_tokens_per_s), 100 * e.checkpoint_share,
                      format_duration(e.lost_per_failure_s));
  if (e.work_s > 0) {
    text += fmt::format("  time to train       {:>12}   {} tokens: {} without failures, {}\n",
                        format_duration(e.wall_s), format_count(in.tokens), format_duration(e.work_s),
                        format_plural(std::llround(e.wall_s / e.job_mtbf_s), "expected failure"));
  }
  if (report.runs) {
    const RunDistribution& runs = *report.runs;
    text += fmt::format("  Monte Carlo         {:>12}   mean of {} runs of {} training ({}, seed {}): p50 {}, p90 {}, "
                        "p99 {}; {:.2f} failures a run\n",
                        format_duration(runs.mean_s), runs.runs, format_duration(report.run_work_s),
                        distribution_name(report.weibull_shape), report.seed, format_duration(runs.p50_s),
                        format_duration(runs.p90_s), format_duration(runs.p99_s), runs.mean_failures);
  }
  if (report.spares && report.runs) {
    const RunModel& pool = *report.spares;
    std::string replan = "with none left, the job waits for a repaired node";
    if (!pool.replanned_slowdown.empty()) {
      std::vector<std::string> steps;
      for (double slowdown : pool.replanned_slowdown) steps.push_back(format_duration(in.step_s * slowdown));
      replan = fmt::format("with none left, re-planned on up to {} nodes fewer (steps {})", steps.size(),
                           fmt::join(steps, ", "));
    }
    text += fmt::format("  spares              {:>12}   hot spares, swap {}, repair {}; {}; a run waits {} and "
                        "trains {} on fewer nodes on average\n",
                        format_plural(pool.spares, "node"), format_duration(pool.swap_s), format_duration(pool.repair_s), replan,
                        format_duration(report.runs->mean_waiting_s), format_duration(report.runs->mean_degraded_s));
    // The headline is the closed form, which replaces a node at once.
    text += fmt::format("  (goodput and time to train above are the closed forms, every failed node replaced at once; "
                        "with {} the Monte Carlo's mean, {}, counts the waits)\n",
                        format_plural(pool.spares, "spare"), format_duration(report.runs->mean_s));
  }
  text += fmt::format("  reliability: {}\n", r.source);
  if (in.asynchronous) {
    text += "  (the closed forms take each snapshot as safe at once; the Monte Carlo runs count the write behind it)\n";
  }
  // Continuations under the figures' descriptions.
  return wrap_lines(text, 35);
}

nlohmann::ordered_json goodput_json(const GoodputReport& report) {
  const RunInputs& in = report.inputs;
  const GoodputEstimate& e = report.estimate;
  const CheckpointCost& c = in.checkpoint;
  nlohmann::ordered_json json;
  json["step_s"] = in.step_s;
  json["tokens_per_step"] = in.tokens_per_step;
  json["gpus"] = in.gpus;
  json["nodes"] = in.nodes;
  json["job_mtbf_s"] = e.job_mtbf_s;
  nlohmann::ordered_json causes = nlohmann::ordered_json::array();
  for (const models::FailureCause& cause : in.reliability.causes) {
    causes.push_back({{"name", cause.name}, {"share", cause.share}, {"takes_node_out", cause.takes_node_out}});
  }
  json["failure_causes"] = std::move(causes);
  json["checkpoint"] = {{"asynchronous", in.asynchronous},
                        {"state_bytes", c.state_bytes},
                        {"write_bytes_per_gpu", c.write_bytes_per_gpu},
                        {"read_bytes_per_gpu", c.read_bytes_per_gpu},
                        {"write_s", c.write_s},
                        {"read_s", c.read_s},
                        {"snapshot_s", c.snapshot_s},
                        {"snapshot_bytes_per_node", c.snapshot_bytes_per_node},
                        {"stall_s", e.stall_s}};
  json["restart_s"] = e.restart_s;
  json["young_interval_s"] = e.young_s;
  json["daly_interval_s"] = e.daly_s;
  json["interval_steps"] = e.interval_steps;
  json["interval_s"] = e.interval_s;
  json["goodput"] = e.goodput;
  json["checkpoint_share"] = e.checkpoint_share;
  json["lost_per_failure_s"] = e.lost_per_failure_s;
  json["effective_tokens_per_s"] = e.effective_tokens_per_s;
  if (e.work_s > 0) {
    json["tokens"] = in.tokens;
    json["work_s"] = e.work_s;
    json["expected_wall_s"] = e.wall_s;
  }
  if (report.runs) {
    const RunDistribution& runs = *report.runs;
    json["monte_carlo"] = {{"runs", runs.runs},           {"work_s", report.run_work_s},
                           {"distribution", distribution_name(report.weibull_shape)},
                           {"seed", report.seed},         {"mean_s", runs.mean_s},
                           {"p50_s", runs.p50_s},         {"p90_s", runs.p90_s},
                           {"p99_s", runs.p99_s},         {"mean_failures", runs.mean_failures},
                           {"mean_waiting_s", runs.mean_waiting_s}, {"mean_degraded_s", runs.mean_degraded_s}};
    if (report.spares) {
      json["monte_carlo"]["spares"] = {{"nodes", report.spares->spares},
                                       {"swap_s", report.spares->swap_s},
                                       {"repair_s", report.spares->repair_s},
                                       {"replanned_slowdown", report.spares->replanned_slowdown}};
    }
  }
  json["reliability_source"] = in.reliability.source;
  return json;
}

}  // namespace pipeplan::planner
