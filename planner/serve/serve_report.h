// `pipeplan serve`'s report: the layouts compared, the chosen one's memory
// per stage and latency distributions, and the commands that run it; its
// batches as a Chrome trace.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "planner/serve/serve_plan.h"

namespace pipeplan::planner {

std::string serve_text(const ServeOptions& options, const ServePlan& plan);
nlohmann::ordered_json serve_json(const ServeOptions& options, const ServePlan& plan);
// Each replica a process, each of its stages a thread, each batch's step
// on a stage a span (chrome://tracing, Perfetto).
std::string serving_trace_json(const std::vector<sim::StageSpan>& spans);

}  // namespace pipeplan::planner
