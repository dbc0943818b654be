// Runs a study's points, in parallel, through the same code as the
// `simulate` and `plan` commands. A point that fails (out of memory, say)
// keeps its reason instead of stopping the study, and a metric one point
// lacks leaves only that cell empty. Results come back in point order
// whatever the number of jobs.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/progress.h"
#include "study/study_file.h"
#include "study/sweep.h"

namespace pipeplan::study {

struct PointOutcome {
  StudyPoint point;
  std::vector<std::string> arguments;  // the command line that reproduces it
  nlohmann::ordered_json metrics;      // metric -> value (number, text or list); null where it has none
  std::map<std::string, std::string> metric_errors;  // metric -> why this point has no value
  // The output's top-level numbers, flags and texts ("stages", "fits",
  // "memory_limit_bytes"), for closed forms and the memory columns.
  nlohmann::ordered_json fields;
  std::string error;                   // empty on success
  bool ran = false;                    // run by this process (see PointShare)
};

// This process's part of a study run over several (MPI ranks): every rank
// runs the points up to the first with a result (which check the study
// file), then the rest are dealt round-robin.
struct PointShare {
  int rank = 0;
  int ranks = 1;
};

struct RunOptions {
  std::string out_dir;
  int jobs = 0;       // 0: all cores
  bool yes = false;   // allow studies over kMaxPointsUnconfirmed
  ProgressFn progress;  // called as points finish
  PointShare share;     // the whole study by default
};

constexpr std::size_t kMaxPointsUnconfirmed = 1'000'000;
// The most points any study runs, --yes or not: each point's arguments and
// results are held until the report (about 1 KB a point: 2 million hold about 2 GB).
constexpr std::size_t kMaxPoints = 2'000'000;

// Checks the size and every point's arguments before running anything,
// then runs points in order until one has a result and checks the metric
// paths and closed forms against it (InputError, with close names), then
// runs the rest (those of `options.share`; the others keep ran = false).
std::vector<PointOutcome> run_study(const StudyFile& study, const RunOptions& options);

}  // namespace pipeplan::study
