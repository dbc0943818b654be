// The discrete-event engine. Resources: one compute stream per rank and the
// links of a Topology. Activities: compute actions (a duration on the
// rank's stream) and transfers (latency + bytes / bandwidth on a link, one at
// a time, queued in issue order). A compute action starts when the previous
// action on its rank is done and its input (activation or gradient) is
// there. With overlap, SEND issues a transfer and moves on, RECV only posts;
// without it, both block the rank's stream until the data has moved.
#pragma once

#include <cstddef>
#include <span>

#include "sim/costs.h"
#include "sim/observer.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace pipeplan::sim {

struct EngineOptions {
  bool overlap_comm = true;
};

struct EngineResult {
  double makespan_s = 0;
  std::size_t actions_executed = 0;
  std::size_t transfers = 0;
  int links = 0;
};

// Replays a lowered, validated schedule. Runs in time linear in the number of
// actions (times log of ranks + links for the event queue). Throws
// ScheduleError if the replay stalls (only possible for unvalidated input).
EngineResult run_engine(const Schedule& lowered, const PipelineCosts& costs, const Topology& topology,
                        const EngineOptions& options, std::span<EngineObserver* const> observers);

}  // namespace pipeplan::sim
