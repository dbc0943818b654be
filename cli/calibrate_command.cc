#include "cli/calibrate_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "calibrate/calibration.h"
#include "calibrate/calibration_report.h"
#include "commands/command_output.h"
#include "commands/output_files.h"
#include "common/error.h"
#include "common/quote.h"
#include "common/units.h"

namespace pipeplan::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> runs_files;
  std::string fit;
  int holdout = 0;
  std::string out;
  std::string name;
  bool report = false;
  bool json = false;
};

commands::CommandOutput report_only(const std::vector<calibrate::MeasuredRun>& runs) {
  const std::vector<calibrate::RunPrediction> rows = calibrate::predict_runs(runs);
  const calibrate::ErrorSummary errors = calibrate::summarise(rows, false);
  commands::CommandOutput output;
  output.json = {{"runs", calibrate::runs_json(rows)},
                 {"mean_abs_error", errors.mean_abs},
                 {"max_abs_error", errors.max_abs}};
  output.text = fmt::format("{}, each predicted on the hardware it names (nothing fitted)\n",
                            format_plural(static_cast<long long>(rows.size()), "run")) +
                calibrate::runs_table(rows) +
                fmt::format("  mean |error| {:.2f} %, max {:.2f} %\n", errors.mean_abs * 100, errors.max_abs * 100);
  return output;
}

// A fit pressed against a bound or stopped on its budget is printed, but
// not written as a description to use: the runs asked for something the
// parameters cannot give. An exactly determined fit is written, marked so.
void refuse_unusable_fit(const calibrate::Calibration& calibration, bool json) {
  std::string why = calibration.converged ? "" : "the fit did not converge";
  for (const calibrate::FittedParameter& parameter : calibration.parameters) {
    if (parameter.at_bound) why = fmt::format("{} is at its bound", parameter.parameter.name);
  }
  if (why.empty()) return;
  commands::print_output({calibrate::calibration_json(calibration), calibrate::calibration_text(calibration)}, json);
  throw InputError(fmt::format("--out: nothing written: {}; check the runs (their step times and settings) or fit "
                               "other parameters",
                               why));
}

// --out and --name as given: a file other than the runs read, and a name
// that stays one YAML scalar (a hardware name: letters, digits, '.', '_', '-').
void check_output_options(const CalibrateOptions& options, const CLI::App& command) {
  if (command.count("--out") > 0 && options.out.empty()) throw InputError("--out: give a file to write, e.g. fitted.yaml");
  if (command.count("--name") > 0 && options.out.empty()) {
    throw InputError("--name names the written description: give --out FILE too");
  }
  if (command.count("--name") > 0) {
    const bool plain = !options.name.empty() && std::all_of(options.name.begin(), options.name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
    if (!plain) {
      throw InputError(fmt::format("--name {}: give a hardware name of letters, digits, '.', '_' and '-', e.g. "
                                   "h100-mycluster",
                                   quoted_input(options.name)));
    }
  }
  for (const std::string& file : options.runs_files) {
    std::error_code error;
    if (!options.out.empty() && std::filesystem::equivalent(options.out, file, error)) {
      throw InputError(fmt::format("--out {} is the runs file it reads; write the fitted description to another file",
                                   quoted_input(options.out)));
    }
  }
}

void run_calibrate(const CalibrateOptions& options, const CLI::App& command) {
  std::vector<calibrate::MeasuredRun> runs;
  for (const std::string& file : options.runs_files) {
    for (calibrate::MeasuredRun& run : calibrate::read_runs_file(file)) runs.push_back(std::move(run));
  }
  if (options.report) {
    for (const char* name : {"--fit", "--holdout", "--out", "--name"}) {
      if (command.count(name) > 0) {
        throw InputError(fmt::format("{}: --report predicts the runs as the descriptions stand, without a fit; "
                                     "drop one of them",
                                     name));
      }
    }
    commands::print_output(report_only(runs), options.json);
    return;
  }
  check_output_options(options, command);
  calibrate::CalibrationOptions fit;
  // One run fixes one parameter: the default's first, the GEMM efficiency.
  const bool one_run = runs.size() - static_cast<std::size_t>(std::max(0, options.holdout)) == 1;
  const bool default_fit = command.count("--fit") == 0;
  fit.fit = default_fit ? calibrate::default_fit() : calibrate::parse_fit(options.fit);
  if (default_fit && one_run) fit.fit.resize(1);
  fit.holdout = options.holdout;
  const calibrate::Calibration calibration = calibrate::calibrate(runs, fit);
  if (!options.out.empty()) refuse_unusable_fit(calibration, options.json);
  const std::string name = options.name.empty() ? calibration.base + "-calibrated" : options.name;
  commands::CommandOutput output{calibrate::calibration_json(calibration), calibrate::calibration_text(calibration)};
  if (default_fit && one_run) {
    output.text.insert(0, fmt::format("one run fixes one parameter: fitting {} alone (--fit names others)\n",
                                      fit.fit.front().name));
  }
  if (!options.out.empty()) {
    commands::write_text_file(
        options.out,
        calibrate::calibrated_hardware_yaml(calibration, name, fmt::format("{}", fmt::join(options.runs_files, " "))),
        "--out");
    output.json["wrote"] = options.out;
    output.text += fmt::format("wrote {} ({}, base {}): use it as --hardware {}\n", options.out, name, calibration.base,
                               options.out);
  } else {
    output.text += "give --out FILE to write the fitted hardware description\n";
  }
  commands::print_output(output, options.json);
}

}  // namespace

void register_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* command = app.add_subcommand(
      "calibrate",
      "Fit a hardware description's efficiency parameters to measured runs (a YAML file whose `runs:` lists each "
      "run's name, model, hardware, layout and measured step_time; docs/calibrate.md) and write the fitted "
      "description; --report prints each run's error as it stands");
  command
      ->add_option("runs", options->runs_files,
                   "Runs YAML files (see configs/calibration/) and comparison.json files written by pipeplan validate "
                   "(the pipeline alone, on the plan's hardware)")
      ->required();
  command->add_option(
      "--fit", options->fit,
      "Parameters to fit, comma-separated [default: gpu.efficiency.matmul.max, runtime.layer_overhead; with one "
      "run the first alone]");
  command->add_option("--holdout", options->holdout,
                      "Runs left out of the fit (spread over the file), to see their error")->capture_default_str();
  command->add_option("--out", options->out, "Write the fitted hardware YAML here (base: the runs' description)");
  command->add_option("--name", options->name, "The fitted description's name [default: <base>-calibrated]");
  command->add_flag("--report", options->report, "Predict every run on its own description and print the errors; no fit");
  command->add_flag("--json", options->json, "Print one JSON object instead of the summary");
  command->callback([options, command] { run_calibrate(*options, *command); });
}

}  // namespace pipeplan::cli
