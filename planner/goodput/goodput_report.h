// `pipeplan goodput`'s report: the plan's step, the failures, the
// checkpoint, the interval and the goodput, with the Monte Carlo runs.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "planner/goodput/goodput.h"
#include "planner/goodput/run_monte_carlo.h"

namespace pipeplan::planner {

struct GoodputReport {
  std::string heading;  // the plan: model, hardware, layout
  RunInputs inputs;
  GoodputEstimate estimate;
  // The runs drawn (none with --runs 0), of `run_work_s` of training each.
  std::optional<RunDistribution> runs;
  double run_work_s = 0;
  double weibull_shape = 1;
  std::uint64_t seed = 0;
  // With hot spares: the runs' model (spares, swap, repair, re-planned steps).
  std::optional<RunModel> spares;
};

std::string goodput_text(const GoodputReport& report);
nlohmann::ordered_json goodput_json(const GoodputReport& report);

}  // namespace pipeplan::planner
