#include "cli/goodput_command.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "commands/command_output.h"
#include "commands/output_files.h"
#include "common/error.h"
#include "common/units.h"
#include "common/yaml_fields.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/goodput_report.h"
#include "planner/plan_file.h"
#include "planner/plan_replay.h"
#include "study/svg_chart.h"

namespace pipeplan::cli {
namespace {

struct GoodputOptions {
  std::string plan;
  std::optional<std::string> tokens;
  std::optional<int> interval_steps;
  bool asynchronous = false;
  int runs = 10000;
  std::optional<std::string> run_length;
  std::uint64_t seed = 1;
  double weibull_shape = 1;
  std::optional<std::string> reliability;
  std::optional<std::string> svg;
  int threads = 0;
  bool json = false;
};

constexpr double kDefaultRunS = 30 * 86400.0;

std::string plan_heading(const planner::PlanFile& file, const std::string& path) {
  const planner::PlanCandidate& plan = file.plan;
  return fmt::format("{} on {} x {}: t={}{} p={} d={}{}, {}, global batch {} x {} tokens (plan {})", file.model,
                     file.gpus(), file.hardware, plan.tp, plan.cp > 1 ? fmt::format(" c={}", plan.cp) : "", plan.pp,
                     plan.dp, plan.zero != models::ZeroStage::kNone ? fmt::format(" ZeRO-{}", static_cast<int>(plan.zero)) : "",
                     plan.schedule, file.global_batch, file.seq_len, path);
}

// Goodput against the interval around the one used, for --svg.
std::string interval_chart(const planner::GoodputReport& report) {
  const planner::GoodputEstimate& e = report.estimate;
  const double step = report.inputs.step_s;
  study::ChartSeries curve{"expected goodput (Daly)", {}, {}};
  const double least = std::max({1.0, e.interval_steps / 16.0, std::ceil(e.durable_after_s / step)});
  for (double steps = least; steps <= e.interval_steps * 16.0; steps *= std::pow(2.0, 0.125)) {
    const double interval = std::round(steps) * step;
    curve.x.push_back(interval / 60);
    curve.y.push_back(100 / planner::expected_wall_s(1, interval, e.stall_s, e.restart_s, e.job_mtbf_s));
  }
  study::ChartSeries used{fmt::format("interval used: {} steps", e.interval_steps), {e.interval_s / 60}, {100 * e.goodput}};
  study::ChartSpec spec;
  spec.title = "Goodput against the checkpoint interval";
  spec.x_label = "compute between checkpoints (min)";
  spec.y_label = "goodput (%)";
  spec.log_x = true;
  spec.y_min_zero = false;
  spec.series = {curve, used};
  return study::render_chart_svg(spec);
}

void run_goodput(const GoodputOptions& options) {
  const planner::PlanFile file = planner::read_plan_yaml(options.plan);
  if (!file.segments.empty()) {
    throw InputError(fmt::format("--plan {}: a pipeline over several GPU kinds has no one failure rate here yet; "
                                 "give a plan of one kind",
                                 options.plan));
  }
  if (!(options.weibull_shape > 0) || options.weibull_shape > 20) {
    throw InputError(fmt::format("--weibull-shape: {} is outside (0, 20]; 1 is exponential, below 1 failures bunch",
                                 options.weibull_shape));
  }
  if (options.runs < 0 || options.runs > 10'000'000) {
    throw InputError(fmt::format("--runs: {} is outside 0 to 10^7 (0: no Monte Carlo runs)", options.runs));
  }
  if (options.interval_steps && *options.interval_steps < 1) {
    throw InputError(fmt::format("--interval-steps: {} is below 1; checkpoint every 1 step or more",
                                 *options.interval_steps));
  }
  const models::ModelConfig model = models::load_model(file.model);
  models::HardwareConfig hardware = models::load_hardware(file.hardware);
  if (options.reliability) {
    const YAML::Node root = load_yaml_file(*options.reliability, "--reliability");
    models::read_reliability(root, *options.reliability, hardware.reliability);
  }
  const planner::ModelSimulation replay = planner::replay_plan(file, model, hardware, {}, nullptr, file.memory_cap_bytes);
  const planner::PlanCandidate& plan = file.plan;
  planner::GoodputReport report;
  report.heading = plan_heading(file, options.plan);
  planner::RunInputs& in = report.inputs;
  in.step_s = replay.iteration_time_s;
  in.tokens_per_step = static_cast<double>(file.global_batch) * file.seq_len;
  in.gpus = file.gpus();
  in.nodes = (in.gpus + hardware.gpus_per_node - 1) / hardware.gpus_per_node;
  in.checkpoint = planner::checkpoint_cost({replay.memory, plan.tp, plan.cp, plan.dp, plan.pp, plan.zero}, hardware);
  in.reliability = hardware.reliability;
  in.asynchronous = options.asynchronous;
  in.interval_steps = options.interval_steps;
  if (options.tokens) in.tokens = parse_large_count(*options.tokens, "--tokens");
  if (options.asynchronous) {
    if (hardware.host_link.bandwidth <= 0) {
      throw InputError(fmt::format("--async snapshots over each GPU's host link, and {} describes none (host_link)",
                                   hardware.name));
    }
    if (in.checkpoint.snapshot_bytes_per_node > in.reliability.host_memory_per_node) {
      throw InputError(fmt::format("--async: a node's snapshot takes {} and its host memory is {} "
                                   "(reliability.host_memory); save synchronously",
                                   format_bytes(in.checkpoint.snapshot_bytes_per_node),
                                   format_bytes(in.reliability.host_memory_per_node)));
    }
  }
  report.estimate = planner::estimate_goodput(in);
  report.weibull_shape = options.weibull_shape;
  report.seed = options.seed;
  if (options.runs > 0) {
    report.run_work_s = options.run_length ? parse_lifetime_s(*options.run_length, "--run-length")
                        : report.estimate.work_s > 0 ? report.estimate.work_s
                                                     : kDefaultRunS;
    if (report.run_work_s < in.step_s) {
      throw InputError(fmt::format("--run-length: {} is below one step ({})", format_span(report.run_work_s),
                                   format_ms(in.step_s)));
    }
    const planner::GoodputEstimate& e = report.estimate;
    report.runs = planner::simulate_runs({report.run_work_s, e.interval_s, e.stall_s, e.durable_after_s, e.restart_s,
                                          e.job_mtbf_s, options.weibull_shape},
                                         options.runs, options.seed, options.threads);
  }
  if (options.svg) commands::write_text_file(*options.svg, interval_chart(report), "--svg");
  commands::print_output({planner::goodput_json(report), planner::goodput_text(report)}, options.json);
}

}  // namespace

void register_goodput_command(CLI::App& app) {
  auto options = std::make_shared<GoodputOptions>();
  CLI::App* command = app.add_subcommand(
      "goodput",
      "Plan the run, not the step: a plan's checkpoint cost under the cluster's failure rates, the checkpoint interval "
      "(Young, Daly), the goodput and the time to train a token budget, with Monte Carlo runs");
  command->add_option("--plan", options->plan, "A plan written by `pipeplan plan --out`")->required();
  command->add_option("--tokens", options->tokens, "Token budget to train, e.g. 15.6T: the expected time to train it");
  command->add_option("--interval-steps", options->interval_steps,
                      "Checkpoint every this many steps [default: Daly's optimum, in whole steps]");
  command->add_flag("--async", options->asynchronous,
                    "Snapshot the state to host memory (the step waits for the copy) and write it behind");
  command->add_option("--runs", options->runs, "Monte Carlo runs; 0 = none")->capture_default_str();
  command->add_option("--run-length", options->run_length,
                      "Training time of each Monte Carlo run, failures excluded, e.g. 30d [default: the token budget's, "
                      "else 30d]");
  command->add_option("--seed", options->seed, "Seed of the Monte Carlo runs")->capture_default_str();
  command->add_option("--weibull-shape", options->weibull_shape,
                      "Times between failures: Weibull of this shape with the job's MTBF as mean (1 = exponential)")
      ->capture_default_str();
  command->add_option("--reliability", options->reliability,
                      "A YAML map over the hardware's reliability: gpu_mtbf, node_mtbf, storage_write, "
                      "storage_write_total, storage_read, storage_read_total, host_memory, relaunch, init, warmup_steps");
  command->add_option("--svg", options->svg, "Write goodput against the checkpoint interval as an SVG chart");
  command->add_option("--threads", options->threads, "Worker threads for the runs; 0 = all cores")->capture_default_str();
  command->add_flag("--json", options->json, "Print one JSON object instead of the summary");
  command->callback([options] { run_goodput(*options); });
}

}  // namespace pipeplan::cli
