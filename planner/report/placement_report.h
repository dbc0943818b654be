// A placement (models/placement.h) as a report: each group's widest tier,
// the nodes of each stage, and the flows on each NIC; text and JSON, as
// `hardware place` and `plan` print them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/cluster.h"
#include "models/placement.h"

namespace pipeplan::planner {

// "node 3" or "nodes 0-7".
std::string node_range(int first, int last);
// Which node groups nodes [first, last] hold: "h100" or "h100, a100".
std::string node_groups_in(const models::ClusterConfig& cluster, int first, int last);

// A table of the groups, then the stages' nodes and the NIC's flows, each
// line indented by two spaces.
std::string placement_text(const models::ClusterConfig& cluster, const models::Placement& placement);
// {"groups": [...], "stages": [...], "flows_per_nic", "node_of_rank"}.
nlohmann::ordered_json placement_json(const models::Placement& placement);

}  // namespace pipeplan::planner
