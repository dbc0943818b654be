// A plan search's outcome as JSON and as a human report.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/placement.h"
#include "planner/plan_file.h"
#include "planner/frameworks/framework_config.h"
#include "planner/plan.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

struct PlanReport {
  std::string model;
  models::ModelConfig model_config;  // for the framework's model flags (the experts')
  std::string hardware;
  int gpus = 0;
  int global_batch = 0;
  int seq_len = 0;
  PlanSearchResult search;
  step::ModelSimulation best;  // the best plan, replayed by the full engine
  PlanCandidate best_plan;
  PlanFile file;  // the best plan as `plan --out` writes it, with the replay's figures
  std::optional<step::ModelSimulation> even;  // the same settings with Megatron's even split
  std::string even_reason;                   // why not, when absent or over the cap
  // Where the best plan's ranks land, in Megatron's default rank order.
  models::ClusterConfig cluster;
  models::Placement placement;
  // The best plan as each framework's config says it (or why it cannot).
  FrameworkConfig torchtitan, megatron_bridge, deepspeed;
  // The framework the search kept to (PlanRequest::framework).
  step::Framework framework = step::Framework::kAny;
};

// A candidate's choices and figures, as the report's "top" lists them.
nlohmann::ordered_json candidate_json(const PlanCandidate& candidate);
// The figures of a full replay of `plan`, in the candidate's keys, with
// each rank's memory breakdown.
nlohmann::ordered_json simulation_json(const PlanCandidate& plan, const step::ModelSimulation& simulation);
// Transformer layers per stage, "10/11/11".
std::string counts_text(const step::StageSplit& split);

nlohmann::ordered_json plan_report_json(const PlanReport& report);
std::string plan_report_text(const PlanReport& report);

}  // namespace pipeplan::planner
