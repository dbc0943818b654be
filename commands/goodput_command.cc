#include "commands/goodput_command.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "charts/svg_chart.h"
#include "commands/argument_check.h"
#include "commands/command_output.h"
#include "commands/output_files.h"
#include "common/error.h"
#include "common/units.h"
#include "common/yaml_fields.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/goodput/goodput_report.h"
#include "planner/plan_file.h"
#include "planner/report/plan_replay.h"
#include "planner/search/plan_search.h"

namespace pipeplan::commands {
namespace {

struct GoodputOptions {
  std::string plan;
  std::optional<std::string> hardware;
  std::optional<std::string> tokens;
  std::optional<int> interval_steps;
  bool asynchronous = false;
  int runs = 10000;
  std::optional<std::string> run_length;
  std::optional<std::uint64_t> seed;
  std::optional<double> weibull_shape;
  std::optional<std::string> reliability;
  std::optional<std::string> svg;
  std::optional<int> spares;
  std::optional<std::string> swap, repair;
  bool replan = false;
  std::optional<int> threads;
  bool json = false;
};

constexpr double kDefaultRunS = 30 * 86400.0;
constexpr std::uint64_t kDefaultSeed = 1;
// Re-planned for up to this many nodes fewer; beyond, the job waits.
constexpr int kMostNodesReplanned = 4;

// The step on k nodes fewer over the plan's, k = 1 .. kMostNodesReplanned:
// the search's best at the same global batch on the most whole nodes of
// those left that some layout divides; none past the first k with no plan.
std::vector<double> replanned_slowdowns(const planner::PlanFile& file, const models::ModelConfig& model,
                                        const models::HardwareConfig& hardware, double step_s, int threads) {
  std::vector<double> slowdowns;
  const int per_node = hardware.gpus_per_node;
  int gpus = 0;
  double step = 0;  // the best step on `gpus` (0: none found)
  for (int k = 1; k <= kMostNodesReplanned; ++k) {
    const int left = static_cast<int>(file.gpus()) - k * per_node;
    if (step == 0 || gpus > left) {
      step = 0;
      for (gpus = left; gpus >= per_node; gpus -= per_node) {
        planner::PlanRequest request;
        request.model = model;
        request.hardware = hardware;
        request.gpus = gpus;
        request.global_batch = file.global_batch;
        request.seq_len = file.seq_len;
        request.memory_cap_bytes = static_cast<double>(file.memory_cap_bytes);
        request.threads = threads;
        try {
          const planner::PlanSearchResult result = planner::search_plans(request, 1);
          if (!result.ranked.empty()) step = result.ranked.front().iteration_time_s;
          break;  // found, or nothing fits (fewer GPUs fit no better)
        } catch (const InputError&) {
          // No layout divides this many GPUs at this batch: a node fewer.
        }
      }
      if (step == 0) break;
    }
    slowdowns.push_back(std::max(1.0, step / step_s));
  }
  return slowdowns;
}

std::string plan_heading(const planner::PlanFile& file, const std::string& hardware, const std::string& path) {
  const planner::PlanCandidate& plan = file.plan;
  return fmt::format("{} on {} x {}: t={}{} p={} d={}{}, {}, global batch {} x {} tokens (plan {})", file.model,
                     file.gpus(), hardware, plan.tp, plan.cp > 1 ? fmt::format(" c={}", plan.cp) : "", plan.pp, plan.dp,
                     plan.zero != models::ZeroStage::kNone ? fmt::format(" ZeRO-{}", static_cast<int>(plan.zero)) : "",
                     plan.schedule, file.global_batch, file.seq_len, path);
}

// Goodput against the interval around the one used, for --svg.
std::string interval_chart(const planner::GoodputReport& report) {
  const planner::GoodputEstimate& e = report.estimate;
  const double step = report.inputs.step_s;
  charts::ChartSeries curve{"expected goodput (Daly)", {}, {}};
  const double least = std::max({1.0, e.interval_steps / 16.0, std::ceil(e.durable_after_s / step)});
  for (double steps = least; steps <= e.interval_steps * 16.0; steps *= std::pow(2.0, 0.125)) {
    const double interval = std::round(steps) * step;
    curve.x.push_back(interval / 60);
    curve.y.push_back(100 / planner::expected_wall_s(1, interval, e.stall_s, e.restart_s, e.job_mtbf_s));
  }
  charts::ChartSeries used{
      fmt::format("interval used: {} steps", e.interval_steps), {e.interval_s / 60}, {100 * e.goodput}};
  charts::ChartSpec spec;
  spec.title = "Goodput against the checkpoint interval";
  spec.x_label = "compute between checkpoints (min)";
  spec.y_label = "goodput (%)";
  spec.log_x = true;
  spec.y_min_zero = false;
  spec.series = {curve, used};
  return charts::render_chart_svg(spec);
}

void run_goodput(const GoodputOptions& options, const OutputSink& sink) {
  const planner::PlanFile file = planner::read_plan_yaml(options.plan);
  if (!file.segments.empty()) {
    throw InputError(
        fmt::format("--plan {}: a pipeline over several GPU kinds has no one failure rate here yet; "
                    "give a plan of one kind",
                    options.plan));
  }
  // Its range is the Monte Carlo's to check (planner::simulate_runs).
  const double shape = options.weibull_shape.value_or(1);
  if (options.runs < 0 || options.runs > 10'000'000) {
    throw InputError(fmt::format("--runs: {} is outside 0 to 10^7 (0: no Monte Carlo runs)", options.runs));
  }
  for (const auto& [given, name] :
       {std::pair{options.seed.has_value(), "--seed"}, std::pair{options.weibull_shape.has_value(), "--weibull-shape"},
        std::pair{options.run_length.has_value(), "--run-length"}}) {
    if (given && options.runs == 0) {
      throw InputError(
          fmt::format("{}: only the Monte Carlo runs read it, and --runs 0 asks for none; drop it or "
                      "give --runs above 0",
                      name));
    }
  }
  if (options.spares) {
    if (*options.spares < 0) throw InputError(fmt::format("--spares: {} is below 0", *options.spares));
    if (!options.repair)
      throw InputError("--spares: give --repair, the time a failed node takes to come back (e.g. 3d)");
    if (options.runs == 0) throw InputError("--spares: spares play out in the Monte Carlo runs; give --runs above 0");
  }
  for (const auto& [given, name] :
       {std::pair{options.swap.has_value(), "--swap"}, std::pair{options.repair.has_value(), "--repair"},
        std::pair{options.replan, "--replan"}}) {
    if (given && !options.spares) {
      throw InputError(fmt::format("{}: only with --spares (without, every failed node is replaced at once)", name));
    }
  }
  if (options.interval_steps && *options.interval_steps < 1) {
    throw InputError(
        fmt::format("--interval-steps: {} is below 1; checkpoint every 1 step or more", *options.interval_steps));
  }
  const models::ModelConfig model = models::load_model(file.model);
  models::HardwareConfig hardware = models::load_hardware(options.hardware.value_or(file.hardware));
  if (options.reliability) {
    const YAML::Node root = load_yaml_file(*options.reliability, "--reliability");
    models::read_reliability(root, *options.reliability, hardware.reliability);
  }
  const step::ModelSimulation replay = planner::replay_plan(file, model, hardware, {}, nullptr, file.memory_cap_bytes);
  const planner::PlanCandidate& plan = file.plan;
  planner::GoodputReport report;
  report.heading = plan_heading(file, options.hardware.value_or(file.hardware), options.plan);
  planner::RunInputs& in = report.inputs;
  in.step_s = replay.iteration_time_s;
  in.tokens_per_step = static_cast<double>(file.global_batch) * file.seq_len;
  in.gpus = file.gpus();
  in.nodes = planner::job_nodes(in.gpus, hardware.gpus_per_node);
  in.checkpoint = planner::checkpoint_cost({replay.memory, plan.tp, plan.cp, plan.dp, plan.pp, plan.zero}, hardware);
  in.reliability = hardware.reliability;
  in.asynchronous = options.asynchronous;
  in.interval_steps = options.interval_steps;
  if (options.tokens) {
    in.tokens = parse_large_count(*options.tokens, "--tokens");
    if (!(in.tokens > 0))
      throw InputError(fmt::format("--tokens: {} is no budget; give one above 0, e.g. 15.6T", *options.tokens));
  }
  if (options.asynchronous) {
    if (hardware.host_link.bandwidth <= 0) {
      throw InputError(
          fmt::format("--async snapshots over each GPU's host link, and {} describes none (host_link)", hardware.name));
    }
    if (in.checkpoint.snapshot_bytes_per_node > in.reliability.host_memory_per_node) {
      throw InputError(fmt::format(
          "--async: a node's snapshot takes {} and its host memory is {} "
          "(reliability.host_memory); save synchronously",
          format_bytes(in.checkpoint.snapshot_bytes_per_node), format_bytes(in.reliability.host_memory_per_node)));
    }
  }
  report.estimate = planner::estimate_goodput(in);
  report.weibull_shape = shape;
  report.seed = options.seed.value_or(kDefaultSeed);
  const int threads = options.threads.value_or(0);
  if (options.runs > 0) {
    report.run_work_s = options.run_length           ? parse_lifetime_s(*options.run_length, "--run-length")
                        : report.estimate.work_s > 0 ? report.estimate.work_s
                                                     : kDefaultRunS;
    if (report.run_work_s < in.step_s) {
      throw InputError(fmt::format("--run-length: {} is below one step ({})", format_duration(report.run_work_s),
                                   format_duration(in.step_s)));
    }
    const planner::GoodputEstimate& e = report.estimate;
    planner::RunModel run{report.run_work_s, e.interval_s, e.stall_s, e.durable_after_s,
                          e.restart_s,       e.job_mtbf_s, shape};
    if (options.spares) {
      run.spares = *options.spares;
      run.node_out_share = in.reliability.node_out_share();
      run.swap_s = options.swap ? parse_lifetime_s(*options.swap, "--swap") : 0;
      run.repair_s = parse_lifetime_s(*options.repair, "--repair");
      if (options.replan) run.replanned_slowdown = replanned_slowdowns(file, model, hardware, in.step_s, threads);
      report.spares = run;
    }
    report.runs = planner::simulate_runs(run, options.runs, report.seed, threads);
  }
  if (options.svg) write_text_file(*options.svg, interval_chart(report), "--svg");
  sink({planner::goodput_json(report), planner::goodput_text(report)}, options.json);
}

}  // namespace

void register_goodput_command(CLI::App& app, OutputSink sink) {
  auto options = std::make_shared<GoodputOptions>();
  CLI::App* command = app.add_subcommand(
      "goodput",
      "Plan the run, not the step: a plan's checkpoint cost under the cluster's failure rates, the checkpoint interval "
      "(Young, Daly), the goodput and the time to train a token budget, with Monte Carlo runs");
  command->add_option("--plan", options->plan, "A plan written by `pipeplan plan --out`")->required();
  command->add_option("--hardware", options->hardware,
                      "Hardware name or YAML file in place of the plan's (its reliability: map with it), as studies "
                      "sweep its fields");
  command->add_option("--tokens", options->tokens, "Token budget to train, e.g. 15.6T: the expected time to train it");
  command->add_option("--interval-steps", options->interval_steps,
                      "Checkpoint every this many steps [default: Daly's optimum, in whole steps]");
  command->add_flag("--async", options->asynchronous,
                    "Snapshot the state to host memory (the step waits for the copy) and write it behind");
  command->add_option("--runs", options->runs, "Monte Carlo runs; 0 = none")
      ->check(whole_number_at_least(0))
      ->capture_default_str();
  command->add_option(
      "--run-length", options->run_length,
      "Training time of each Monte Carlo run, failures excluded, e.g. 30d [default: the token budget's, "
      "else 30d]");
  command->add_option("--seed", options->seed, "Seed of the Monte Carlo runs [default: 1]")
      ->check(whole_number_at_least(0));
  command->add_option(
      "--weibull-shape", options->weibull_shape,
      "Times between failures in the Monte Carlo runs: Weibull of this shape, 0.1 to 20, with the job's "
      "MTBF as mean [default: 1, exponential]");
  command->add_option(
      "--reliability", options->reliability,
      "A YAML map over the hardware's reliability: gpu_mtbf, node_mtbf, storage_write, "
      "storage_write_total, storage_read, storage_read_total, host_memory, relaunch, init, warmup_steps");
  command->add_option("--svg", options->svg, "Write goodput against the checkpoint interval as an SVG chart");
  command->add_option("--spares", options->spares,
                      "Hot spare nodes: a failed node is swapped for one at its restart [default: replaced at once]");
  command->add_option("--swap", options->swap,
                      "With --spares: what swapping a spare in adds to the restart, e.g. 10min");
  command->add_option("--repair", options->repair, "With --spares: how long a failed node is out, e.g. 3d");
  command->add_flag("--replan", options->replan,
                    "With --spares: with none left, restart at once on the nodes left at the step the planner finds "
                    "for them (up to 4 nodes fewer) instead of waiting for a repaired node");
  command->add_option("--threads", options->threads, "Worker threads for the runs; 0 = all cores [default: 0]")
      ->check(whole_number_at_least(0));
  command->add_flag("--json", options->json, "Print one JSON object instead of the summary");
  command->callback([options, sink] { run_goodput(*options, sink); });
}

}  // namespace pipeplan::commands
