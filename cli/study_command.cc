#include "cli/study_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/study_ranks.h"
#include "commands/argument_check.h"
#include "commands/terminal_progress.h"
#include "common/error.h"
#include "study/outcome_exchange.h"
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

std::string default_out_dir(const std::string& file) {
  return fmt::format("study-{}", std::filesystem::path(file).stem().string());
}

// Runs this process's share; under mpirun, rank 0 gathers every rank's
// results (or first refusal) and only it reports. Returns false on ranks
// other than 0, which write nothing.
bool run_shares(const StudyRanks& ranks, const StudyOptions& options, const std::string& out_dir,
                std::optional<study::StudyFile>& study, std::vector<study::PointOutcome>& outcomes) {
  const bool root = ranks.rank() == 0;
  std::string refusal;
  try {
    study = study::read_study(options.file);
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error) throw InputError(fmt::format("--out: cannot create '{}': {}", out_dir, error.message()));
    outcomes = study::run_study(*study, {out_dir, options.jobs, options.yes,
                                         root ? commands::terminal_progress("study") : ProgressFn{},
                                         {ranks.rank(), ranks.ranks()}});
  } catch (const InputError& error) {
    if (ranks.ranks() == 1) throw;
    refusal = error.what();
  }
  if (ranks.ranks() == 1) return true;
  const std::vector<std::string> parts =
      ranks.gather(refusal.empty() ? "R" + study::pack_outcomes(outcomes) : "E" + refusal);
  if (!root) return false;
  for (std::size_t rank = 0; rank < parts.size(); ++rank) {
    if (parts[rank].front() == 'E') {
      throw InputError(rank == 0 ? parts[rank].substr(1) : fmt::format("rank {}: {}", rank, parts[rank].substr(1)));
    }
  }
  for (std::size_t rank = 1; rank < parts.size(); ++rank) study::merge_outcomes(parts[rank].substr(1), outcomes);
  return true;
}

void run_study_command(const StudyOptions& options) {
  const StudyRanks ranks;
  const std::string out_dir = options.out_dir.empty() ? default_out_dir(options.file) : options.out_dir;
  const auto start = std::chrono::steady_clock::now();
  std::optional<study::StudyFile> study;
  std::vector<study::PointOutcome> outcomes;
  if (!run_shares(ranks, options, out_dir, study, outcomes)) return;
  const std::vector<std::string> files = study::write_study_outputs(*study, outcomes, out_dir);
  std::size_t failed = 0;
  for (const study::PointOutcome& outcome : outcomes) failed += outcome.error.empty() ? 0 : 1;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string on_ranks = ranks.ranks() > 1 ? fmt::format(" on {} ranks", ranks.ranks()) : "";
  std::cout << fmt::format("{}: {} point{} ({} without a result){} in {:.2f} s; wrote {} in {}\n",
                           study->title.empty() ? options.file : study->title, outcomes.size(),
                           outcomes.size() == 1 ? "" : "s", failed, on_ranks, seconds, fmt::join(files, ", "), out_dir);
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
               "results.json, SVG plots, report.md and report.html; under mpirun, the points are shared by the "
               "ranks and rank 0 writes");
  command->add_option("file", options->file, "Study YAML (see configs/studies/)")->required();
  command->add_option("--out", options->out_dir, "Output folder [default: study-<file name>]");
  command->add_option("--jobs,-j", options->jobs, "Points run in parallel (per rank under mpirun); 0 = all cores")
      ->check(commands::whole_number_at_least(0))
      ->capture_default_str();
  command->add_flag("--yes", options->yes, "Run studies of more than a million points (at most 2 million)");
  command->callback([options] { run_study_command(*options); });
}

}  // namespace pipeplan::cli
