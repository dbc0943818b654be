#include "study/runner.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <mutex>

#include "commands/in_process.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/units.h"
#include "study/metric_path.h"
#include "study/plot_data.h"
#include "study/point_command.h"

namespace pipeplan::study {
namespace {

// The output's top-level values, and which ranks are over the memory limit
// ("rank 0 +683.28 GiB, rank 1 +607.28 GiB").
nlohmann::ordered_json top_level_fields(const nlohmann::ordered_json& output) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  for (const auto& [key, value] : output.items()) {
    if (value.is_primitive()) fields[key] = value;
  }
  if (output.contains("over_memory_ranks")) {
    std::string over;
    for (const auto& rank : output.at("over_memory_ranks")) {
      over += fmt::format("{}rank {} +{}", over.empty() ? "" : ", ", rank.at("rank").get<int>(),
                          format_bytes(rank.at("over_by_bytes").get<std::int64_t>()));
    }
    fields["over_memory"] = over;
  }
  return fields;
}

// Runs the point; returns its output (null when the point has no result).
nlohmann::ordered_json run_point(const StudyFile& study, PointOutcome& outcome) {
  outcome.ran = true;
  nlohmann::ordered_json output;
  try {
    output = commands::run_in_process(mode_command(study.mode), outcome.arguments);
  } catch (const InputError& error) {
    // An infeasible point is a result, not a failure of the study.
    outcome.error = error.what();
    return nullptr;
  }
  outcome.metrics = nlohmann::ordered_json::object();
  for (const std::string& metric : study.metrics) {
    try {
      outcome.metrics[metric] = extract_metric(output, metric);
    } catch (const InputError& error) {
      outcome.metrics[metric] = nullptr;
      outcome.metric_errors[metric] = error.what();
    }
  }
  outcome.fields = top_level_fields(output);
  return output;
}

// What the first point with a result shows about the study file.
void check_against(const StudyFile& study, const nlohmann::ordered_json& output, const PointOutcome& outcome) {
  const std::string_view command = mode_command(study.mode);
  for (const std::string& metric : study.metrics) check_metric_path(output, metric, command);
  for (const PlotSpec& plot : study.plots) check_references(study, plot, outcome);
}

}  // namespace

std::vector<PointOutcome> run_study(const StudyFile& study, const RunOptions& options) {
  const std::size_t total = point_count(study);
  if (total > kMaxPoints) {
    throw InputError(fmt::format("the study has {} points, over the {} any study runs (each is held in memory until "
                                 "the report); shrink the sweep or split it",
                                 total == std::numeric_limits<std::size_t>::max() ? std::string("more than 10^19")
                                                                                  : std::to_string(total),
                                 kMaxPoints));
  }
  if (total > kMaxPointsUnconfirmed && !options.yes) {
    throw InputError(fmt::format("the study has {} points (over {}); shrink the sweep or pass --yes", total,
                                 kMaxPointsUnconfirmed));
  }
  if (options.share.ranks < 1 || options.share.rank < 0 || options.share.rank >= options.share.ranks) {
    throw InputError(fmt::format("rank {} of {}: a study's share needs 0 <= rank < ranks", options.share.rank,
                                 options.share.ranks));
  }
  if (total <= kMaxPointsUnconfirmed && options.yes) {
    throw InputError(fmt::format("--yes confirms studies of over {} points; this one has {}: drop it",
                                 kMaxPointsUnconfirmed, total));
  }
  const std::string config_dir = options.out_dir + "/configs";
  std::vector<PointOutcome> outcomes;
  for (StudyPoint& point : expand_points(study)) {
    PointOutcome outcome;
    outcome.arguments = point_arguments(study, point, config_dir);  // bad fields fail here, before any run
    outcome.point = std::move(point);
    outcomes.push_back(std::move(outcome));
  }
  std::atomic<std::size_t> done{0};
  std::mutex progress_mutex;
  std::size_t to_run = outcomes.size();  // this process's points, once its share is known
  auto finished = [&] {
    const std::size_t count = ++done;
    if (options.progress) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(count, to_run, "points");
    }
  };
  // In order until one has a result, which checks the metrics and closed
  // forms before the rest run.
  std::size_t first = 0;
  for (; first < outcomes.size(); ++first) {
    const nlohmann::ordered_json output = run_point(study, outcomes[first]);
    finished();
    if (!output.is_null()) {
      check_against(study, output, outcomes[first]);
      break;
    }
  }
  std::vector<std::size_t> share;
  const auto ranks = static_cast<std::size_t>(options.share.ranks);
  for (std::size_t index = first + 1 + static_cast<std::size_t>(options.share.rank); index < outcomes.size();
       index += ranks) {
    share.push_back(index);
  }
  to_run = done + share.size();
  parallel_for(share.size(), options.jobs, [&](std::size_t at) {
    run_point(study, outcomes[share[at]]);
    finished();
  });
  return outcomes;
}

}  // namespace pipeplan::study
