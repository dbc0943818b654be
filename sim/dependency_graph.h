// The dependency graph of a lowered schedule (Boost.Graph, compressed sparse
// rows): one vertex per action, edges for each rank's program order and for
// the data each action needs. A cycle is a deadlock; the longest weighted
// path is the critical path.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <cstdint>
#include <vector>

#include "sim/action_index.h"
#include "sim/costs.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace pipeplan::sim {

// kBlocking: every action, SEND and RECV included, holds its rank until done
// (what validation checks: the strictest reading, as PyTorch's runtime).
// kOverlap: SEND and RECV do not hold the rank; only compute waits for data.
enum class CommSemantics { kBlocking, kOverlap };

struct DependencyEdge {
  double weight_s = 0;  // delay between the source's end and the target's start
};

using DependencyCsr = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, DependencyEdge,
                                                         boost::no_property, std::uint32_t, std::uint32_t>;

struct DependencyGraph {
  DependencyCsr graph;
  std::vector<double> vertex_weight_s;  // duration of each action
};

// Timing for weights; without it every weight is zero (structure only).
struct GraphTiming {
  const PipelineCosts* costs = nullptr;
  const Topology* topology = nullptr;
};

// Works on the lowered form and on the compute-only form (where a
// cross-rank input is an edge from its producer weighted by the transfer).
// Missing actions are skipped: run validate_schedule's checks first.
DependencyGraph build_dependency_graph(const Schedule& lowered, const ActionIndex& index, CommSemantics semantics,
                                       GraphTiming timing = {});

// A cycle as vertices v0 -> v1 -> ... -> v0, or empty if the graph is a DAG.
std::vector<std::uint32_t> find_cycle(const DependencyGraph& graph);

// Earliest start of every vertex when each starts as soon as its
// predecessors allow (Kahn's order). Vertices on or behind a cycle keep -1.
struct EarliestStarts {
  std::vector<double> start_s;
  std::vector<std::uint32_t> critical_predecessor;  // ActionIndex::kAbsent for none
  std::uint32_t last_vertex = ActionIndex::kAbsent;  // ends last
  double length_s = 0;                               // critical path length
};
EarliestStarts earliest_starts(const DependencyGraph& graph);

// The critical path's vertices, first to last.
std::vector<std::uint32_t> critical_path(const EarliestStarts& starts);

}  // namespace pipeplan::sim
