#include "calibrate/validation_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "common/text_file.h"
#include "models/model_config.h"
#include "planner/plan_file.h"
#include "step/stage_split.h"

namespace pipeplan::calibrate {
namespace {

namespace fs = std::filesystem;

nlohmann::json load_json(const std::string& path) {
  const std::string text = read_text_file(path, "a comparison.json written by pipeplan validate");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: not JSON ({}); give a comparison.json written by pipeplan validate", path,
                                 error.what()));
  }
}

// Where the named plan is: beside the comparison, in the directory above it
// (validate writes into --out DIR next to the plan), or as named from here
// (validate records the name it was given). Two different files that fit
// are refused: which one ran cannot be told.
std::string plan_path(const std::string& comparison_path, const std::string& named) {
  const fs::path here = fs::path(comparison_path).parent_path();
  std::vector<fs::path> found;
  for (const fs::path& candidate : {here / named, here.parent_path() / named, fs::path(named)}) {
    std::error_code error;
    if (!fs::is_regular_file(candidate, error)) continue;
    const fs::path canonical = fs::weakly_canonical(candidate, error);
    if (std::find(found.begin(), found.end(), canonical) == found.end()) found.push_back(canonical);
  }
  if (found.empty()) {
    throw InputError(fmt::format("{}: plan: '{}' is found neither beside it, above it nor from here; put the plan "
                                 "beside the comparison",
                                 comparison_path, named));
  }
  if (found.size() > 1) {
    throw InputError(fmt::format("{}: plan: '{}' names both {} and {}; keep one, or name the plan by its full path",
                                 comparison_path, named, found[0].string(), found[1].string()));
  }
  return found.front().string();
}

}  // namespace

MeasuredRun read_validation_run(const std::string& comparison_path) {
  const nlohmann::json json = load_json(comparison_path);
  const auto fail = [&](const char* field, const std::string& message) {
    throw InputError(fmt::format("{}: {}: {}", comparison_path, field, message));
  };
  if (!json.is_object() || !json.contains("plan") || !json["plan"].is_string()) {
    fail("plan", "missing; give a comparison.json written by pipeplan validate");
  }
  if (!json.contains("measured_iteration_s")) {
    fail("measured_iteration_s", "missing; give a comparison.json written by pipeplan validate");
  }
  if (!json["measured_iteration_s"].is_number()) fail("measured_iteration_s", "must be a number of seconds, e.g. 0.52");
  const double measured = json["measured_iteration_s"].get<double>();
  if (!(measured > 0 && measured <= kMostMeasuredStepS)) {
    fail("measured_iteration_s", "must be a measured time above 0 and at most a day (86400 s)");
  }
  const std::string plan_file = plan_path(comparison_path, json["plan"].get<std::string>());
  const planner::PlanFile plan = planner::read_plan_yaml(plan_file);
  const planner::PlanCandidate& candidate = plan.plan;
  if (candidate.tp != 1 || candidate.cp != 1 || candidate.dp != 1) {
    fail("plan", fmt::format("its plan has t = {}, c = {}, d = {}; validate runs the pipeline alone (t = c = d = 1)",
                             candidate.tp, candidate.cp, candidate.dp));
  }
  MeasuredRun run;
  run.place = comparison_path;
  run.name = fs::path(comparison_path).parent_path().filename().string();
  if (run.name.empty()) run.name = comparison_path;
  run.source = "pipeplan validate of " + plan_file;
  run.model = plan.model;
  run.hardware = plan.hardware;
  run.gpus = candidate.pp;
  run.job.pp = candidate.pp;
  run.job.virtual_stages = candidate.virtual_stages;
  run.job.micro_batch_size = candidate.micro_batch_size;
  run.global_batch = candidate.microbatches * candidate.micro_batch_size;
  run.seq = plan.seq_len;
  run.job.schedule = candidate.schedule;
  run.job.microbatches = candidate.microbatches;
  run.job.recompute = candidate.recompute;
  run.job.recompute_modules = candidate.recompute_modules;
  run.job.mtp_layers = candidate.mtp_layers;
  run.pipeline_only = true;
  // The split the plan file states as a Megatron layout (what validate ran).
  run.split = plan.layout.empty() ? candidate.split
                                  : step::split_from_layout(plan.layout, models::load_model(plan.model).layers,
                                                            candidate.pp * candidate.virtual_stages,
                                                            candidate.mtp_layers);
  run.step_time_s = measured;
  return run;
}

}  // namespace pipeplan::calibrate
