#include "cli/study_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands/terminal_progress.h"
#include "common/error.h"
#include "study/runner.h"
#include "study/study_report.h"

namespace pipeplan::cli {
namespace {

struct StudyOptions {
  std::string file;
  std::string out_dir;
  int jobs = 0;
  bool yes = false;
};

void run_study_command(const StudyOptions& options) {
  const study::StudyFile study = study::read_study(options.file);
  const std::string out_dir = options.out_dir.empty()
                                  ? fmt::format("study-{}", std::filesystem::path(options.file).stem().string())
                                  : options.out_dir;
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) throw InputError(fmt::format("--out: cannot create '{}': {}", out_dir, error.message()));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<study::PointOutcome> outcomes =
      study::run_study(study, {out_dir, options.jobs, options.yes, commands::terminal_progress("study")});
  const std::vector<std::string> files = study::write_study_outputs(study, outcomes, out_dir);
  std::size_t failed = 0;
  for (const study::PointOutcome& outcome : outcomes) failed += outcome.error.empty() ? 0 : 1;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("{}: {} points ({} without a result) in {:.2f} s; wrote {} in {}\n",
                           study.title.empty() ? options.file : study.title, outcomes.size(), failed, seconds,
                           fmt::join(files, ", "), out_dir);
  // Nothing to compare: the base itself is wrong, not one point.
  if (!outcomes.empty() && failed == outcomes.size()) {
    throw InputError(fmt::format("no point of the study has a result; the first says: {} (results.csv in {} has each "
                                 "point's error)",
                                 outcomes.front().error, out_dir));
  }
}

}  // namespace

void register_study_command(CLI::App& app) {
  auto options = std::make_shared<StudyOptions>();
  CLI::App* command = app.add_subcommand(
      "study", "Run a what-if study (a YAML file: base options, sweep, metrics, plots) and write results.csv, "
               "results.json, SVG plots, report.md and report.html");
  command->add_option("file", options->file, "Study YAML (see configs/studies/)")->required();
  command->add_option("--out", options->out_dir, "Output folder [default: study-<file name>]");
  command->add_option("--jobs,-j", options->jobs, "Points run in parallel; 0 = all cores")->capture_default_str();
  command->add_flag("--yes", options->yes, "Run studies of more than a million points");
  command->callback([options] { run_study_command(*options); });
}

}  // namespace pipeplan::cli
