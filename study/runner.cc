#include "study/runner.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <mutex>

#include "cli/in_process.h"
#include "common/error.h"
#include "common/parallel.h"
#include "study/metric_path.h"
#include "study/point_command.h"

namespace pipeplan::study {
namespace {

void run_point(const StudyFile& study, PointOutcome& outcome) {
  try {
    const nlohmann::ordered_json output = cli::run_in_process(mode_command(study.mode), outcome.arguments);
    outcome.metrics = nlohmann::ordered_json::object();
    for (const std::string& metric : study.metrics) outcome.metrics[metric] = extract_metric(output, metric);
  } catch (const InputError& error) {
    // An infeasible point is a result, not a failure of the study.
    outcome.error = error.what();
  }
}

}  // namespace

std::vector<PointOutcome> run_study(const StudyFile& study, const RunOptions& options) {
  const std::size_t total = point_count(study);
  if (total > kMaxPointsUnconfirmed && !options.yes) {
    throw InputError(fmt::format("the study has {} points (over {}); shrink the sweep or pass --yes", total,
                                 kMaxPointsUnconfirmed));
  }
  const std::string config_dir = options.out_dir + "/configs";
  std::filesystem::create_directories(config_dir);
  std::vector<PointOutcome> outcomes;
  for (StudyPoint& point : expand_points(study)) {
    PointOutcome outcome;
    outcome.arguments = point_arguments(study, point, config_dir);  // bad fields fail here, before any run
    outcome.point = std::move(point);
    outcomes.push_back(std::move(outcome));
  }
  std::atomic<std::size_t> done{0};
  std::mutex progress_mutex;
  parallel_for(outcomes.size(), options.jobs, [&](std::size_t index) {
    run_point(study, outcomes[index]);
    const std::size_t finished = ++done;
    if (options.progress) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(finished, outcomes.size());
    }
  });
  return outcomes;
}

}  // namespace pipeplan::study
