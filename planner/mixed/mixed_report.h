// A plan search over several GPU kinds as JSON and as a human report: each
// kind alone, the pipelines over kinds, and the best plan in full (a kind
// alone as any homogeneous plan is reported; a pipeline over kinds with
// each rank's kind, t and layers, and which framework can run it).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "planner/mixed/mixed_search.h"
#include "planner/plan_file.h"
#include "planner/report/plan_report.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

struct MixedReport {
  std::string model;
  std::string cluster;
  int gpus = 0;
  int global_batch = 0;
  int seq_len = 0;
  MixedSearchResult search;
  std::optional<PlanReport> alone_best;       // the best is one kind alone: its full report
  // The best plan as `plan --out` writes it (the kind alone's, naming the
  // kind after the cluster: "cluster.yaml:h100-sxm").
  PlanFile file;
  std::optional<step::ModelSimulation> mixed_best;  // the best runs over kinds: its replay
};

// Which frameworks can run a pipeline over kinds, in one sentence.
std::string mixed_framework_line(const MixedPipeline& pipeline);

nlohmann::ordered_json mixed_report_json(const MixedReport& report);
// `whole`: the best single-kind plan's whole report (plan --verbose), else its summary.
std::string mixed_report_text(const MixedReport& report, bool whole = true);

}  // namespace pipeplan::planner
