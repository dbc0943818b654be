// Runs a study's points, in parallel, through the same code as the
// `simulate` and `plan` commands. A point that fails (out of memory, say)
// keeps its reason instead of stopping the study. Results come back in
// point order whatever the number of jobs.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "study/study_file.h"
#include "study/sweep.h"

namespace pipeplan::study {

struct PointOutcome {
  StudyPoint point;
  std::vector<std::string> arguments;  // the command line that reproduces it
  nlohmann::ordered_json metrics;      // metric -> value (number, text or list)
  std::string error;                   // empty on success
};

struct RunOptions {
  std::string out_dir;
  int jobs = 0;       // 0: all cores
  bool yes = false;   // allow studies over kMaxPointsUnconfirmed
  std::function<void(std::size_t done, std::size_t total)> progress;  // called as points finish
};

constexpr std::size_t kMaxPointsUnconfirmed = 1'000'000;

// Checks the size and every point's arguments before running anything.
std::vector<PointOutcome> run_study(const StudyFile& study, const RunOptions& options);

}  // namespace pipeplan::study
