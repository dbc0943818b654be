#include "cli/validate_command.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "commands/argument_check.h"
#include "commands/output_files.h"
#include "commands/terminal_progress.h"
#include "common/error.h"
#include "common/quote.h"
#include "models/profile_file.h"
#include "profiler/memory_probe.h"
#include "validate/comparison.h"
#include "validate/cuda/cuda_execution.h"
#include "validate/cuda/cuda_prediction.h"
#include "validate/plan_profile.h"
#include "validate/rank_execution.h"
#include "validate/searched_order_share.h"
#include "validate/validation_plan.h"
#include "validate/world.h"

namespace pipeplan::cli {
namespace {

struct ValidateOptions {
  std::string plan;
  std::string backend = "cpu";
  int iterations = 5;
  int warmup = 1;
  std::optional<std::string> profile;
  std::string out = "validation";
  double timeout_s = 60;
  bool check_gradients = false;
  int inject_stall = -1;
  std::uint64_t seed = 1234;
};

// Long enough for rank 0 to measure a large model's layers.
constexpr double kProfileWaitS = 3600;

void check_backend(const std::string& backend) {
  if (backend == "cuda") validate::require_cuda_backend();
}

// Why this run's prediction is not the plan file's figure.
std::vector<std::string> prediction_notes(const validate::ValidationPlan& plan, const step::ModelSimulation& predicted,
                                          bool reprofiled) {
  std::vector<std::string> notes;
  const std::string plan_source = plan.file.profile.empty() ? "the analytical model" : plan.file.profile;
  if (reprofiled) {
    notes.push_back(fmt::format("predicted with the plan's layers measured on these ranks just now (no --profile); "
                                "the plan was costed with {}",
                                plan_source));
  }
  if (plan.file.plan.iteration_time_s > 0) {
    notes.push_back(fmt::format("the plan file's {:.2f} ms is the whole step on {} ({} + gradient sync + optimizer); "
                                "this run executes and predicts the pipeline alone ({:.2f} ms predicted here)",
                                plan.file.plan.iteration_time_s * 1e3, plan.file.hardware, plan_source,
                                predicted.report.makespan_s * 1e3));
  }
  return notes;
}

void write_outputs(const ValidateOptions& options, const validate::ValidationPlan& plan,
                   const std::vector<validate::RankResult>& results, const step::ModelSimulation& predicted,
                   const std::optional<models::Profile>& measured_profile) {
  validate::Comparison comparison = validate::compare_runs(results, predicted);
  comparison.plan = plan.path;
  comparison.backend = options.backend;
  comparison.notes = prediction_notes(plan, predicted, measured_profile.has_value());
  comparison.settings = {{"iterations", options.iterations}, {"warmup", options.warmup},
                         {"check_gradients", options.check_gradients}, {"seed", options.seed},
                         {"timeout_s", options.timeout_s}, {"profile", options.profile.value_or("")}};
  std::filesystem::create_directories(options.out);
  const std::filesystem::path dir(options.out);
  commands::write_text_file((dir / "comparison.json").string(), validate::comparison_json(comparison), "--out");
  commands::write_text_file((dir / "trace.json").string(), validate::combined_trace_json(results, comparison, predicted.report),
                  "--out");
  const std::string summary = validate::comparison_summary(comparison);
  commands::write_text_file((dir / "summary.txt").string(), summary, "--out");
  if (measured_profile) {
    commands::write_text_file((dir / "profile.yaml").string(), models::write_profile_yaml(*measured_profile), "--out");
  }
  std::cout << summary << fmt::format("wrote {}/comparison.json, trace.json, summary.txt\n", options.out);
  if (comparison.gradients && !validate::gradients_passed(comparison)) {
    throw InputError(fmt::format("the pipelined gradients differ from the reference (worst {} at {:.2e})",
                                 comparison.gradients->worst_parameter, comparison.gradients->max_relative_error));
  }
}

void run_validate(const ValidateOptions& options, validate::World& world) {
  check_backend(options.backend);
  if (options.inject_stall >= world.ranks() || (options.inject_stall >= 0 && world.ranks() < 2)) {
    throw InputError(fmt::format("--inject-stall {}: stalling a rank needs another to notice it; run 2 or more ranks "
                                 "and name one of 0..{}",
                                 options.inject_stall, world.ranks() - 1));
  }
  profiler::keep_freed_memory();
  validate::ValidationPlan plan = validate::prepare_validation(options.plan, world.ranks(), options.backend);
  std::optional<models::Profile> given;
  if (options.profile) given = models::read_profile_yaml(*options.profile);
  // On GPUs the device memory is checked (the plan's hardware); on CPUs also this host's.
  const std::int64_t available =
      options.backend == "cuda" ? 0 : validate::available_bytes_per_rank(world.ranks_on_this_host());
  validate::check_memory(plan, validate::predict(plan, given ? &*given : nullptr, options.profile.value_or("")),
                         available);
  // Rank 0 shows how far it got, on a terminal.
  const ProgressFn progress = world.rank() == 0 ? commands::terminal_progress("validate") : ProgressFn{};
  std::optional<models::Profile> measured;
  if (!given) {
    const ProgressFn profiling = progress ? commands::terminal_progress("profiling the plan's layers") : ProgressFn{};
    measured = options.backend == "cuda"
                   ? validate::measure_cuda_profile(plan, world.transport(), kProfileWaitS, profiling)
                   : validate::measure_cpu_profile(plan, world.transport(), kProfileWaitS, profiling);
  }
  // Rank 0 predicts; the others only run.
  std::optional<step::ModelSimulation> predicted;
  if (world.rank() == 0) {
    const std::string profile_name =
        options.profile.value_or((std::filesystem::path(options.out) / "profile.yaml").string());
    predicted = validate::predict(plan, given ? &*given : &*measured, profile_name);
    validate::check_memory(plan, *predicted, available);
  }
  // A searched order is the one rank 0's prediction replayed, for the costs measured.
  if (plan.searched_order) validate::share_searched_order(plan, predicted ? &*predicted : nullptr, world.transport());

  validate::ExecutionSettings settings;
  settings.iterations = options.iterations;
  settings.warmup = options.warmup;
  settings.check_gradients = options.check_gradients;
  settings.seed = options.seed;
  settings.stall_rank = options.inject_stall;
  settings.stall_s = 4 * options.timeout_s;
  settings.progress = progress;
  const validate::RankResult mine =
      options.backend == "cuda"
          ? validate::execute_rank_cuda(plan.model, plan.shape, plan.lowered, plan.split, world.transport(), settings)
          : validate::execute_rank(plan.model, plan.shape, plan.lowered, plan.split, world.transport(), settings);
  const std::vector<validate::RankResult> all = validate::gather_results(world.transport(), mine);
  if (world.rank() == 0) write_outputs(options, plan, all, *predicted, measured);
}

// Under mpirun a failing rank stops them all (none waits on it), after
// saying which rank failed and why.
void run_on_world(const ValidateOptions& options) {
  if (options.timeout_s <= 0) throw InputError("--timeout must be > 0 seconds");
  validate::World world(options.timeout_s);
  try {
    run_validate(options, world);
  } catch (const std::exception& error) {
    if (world.ranks() == 1) throw;
    std::cerr << fmt::format("pipeplan: error: rank {}: {}\n", world.rank(), one_line(error.what())) << std::flush;
    validate::abort_world(2);
    throw;
  }
}

}  // namespace

void register_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate",
      "Execute a plan for real (mpirun -np P, one pipeline rank each) and compare the measured iteration, bubble and "
      "memory with the simulation");
  command->add_option("--plan", options->plan, "Plan YAML (pipeplan plan --out)")->required();
  command->add_option("--backend", options->backend, "cpu (Eigen, fp32, MPI between ranks) or cuda")
      ->capture_default_str();
  command->add_option("--iterations", options->iterations, "Measured iterations (the median is reported)")
      ->capture_default_str();
  command->add_option("--warmup", options->warmup, "Iterations run before measuring")->capture_default_str();
  command->add_option("--profile", options->profile,
                      "Measured costs to predict with [default: measure the plan's layers on these ranks first]");
  command->add_option("--out", options->out, "Directory for comparison.json, trace.json and summary.txt")
      ->capture_default_str();
  command->add_option("--timeout", options->timeout_s, "Seconds to wait for another rank before naming it as failed")
      ->capture_default_str();
  command->add_flag("--check-gradients", options->check_gradients,
                    "First compare the loss and every gradient of one iteration with an unpipelined run");
  command->add_option("--seed", options->seed, "Seed of the weights and data")
      ->check(commands::whole_number_at_least(0))
      ->capture_default_str();
  command->add_option("--inject-stall", options->inject_stall,
                      "Fault test: this rank stops answering before the measured iterations");
  command->callback([options] { run_on_world(*options); });
}

}  // namespace pipeplan::cli
