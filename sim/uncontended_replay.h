// A replay without the event queue, for searches that cost many schedules:
// every transfer starts when it is issued (links never queue) and overlaps
// computation, so each compute action starts as soon as its rank is free and
// its input has arrived. Ranks run until they block on an input and are
// woken when it is produced: linear in the actions. Its times equal
// run_engine's (with overlap) whenever no transfer waits for its link, and
// it reports to the same observers, rank by rank in program order.
#pragma once

#include <span>

#include "sim/costs.h"
#include "sim/critical_path.h"
#include "sim/engine.h"
#include "sim/observer.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace pipeplan::sim {

// Takes the compute-only form (comm actions, if any, are skipped: the
// transfer is implied by the stage-to-rank mapping). Throws ScheduleError
// if the schedule deadlocks (a rank waits for an input never produced). With
// `path`, also records which predecessor each action waited on and returns
// the critical path: the longest path of the dependency graph with
// communication overlapped, in one pass.
EngineResult replay_uncontended(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                                std::span<EngineObserver* const> observers, CriticalPath* path = nullptr);

// What the replay's transfers did on their links (the engine's link
// resources: one per direction between ranks, shared between nodes).
struct LinkUse {
  std::size_t transfers = 0;  // cross-rank messages
  int links = 0;              // link resources the schedule's boundaries use
  // Some transfer started before the previous one on its link ended: the
  // engine, which queues them, could time the schedule differently.
  bool queued = false;
};

// The replay and its link use: when no transfer queues, its times, memory
// and usage are exactly run_engine's with overlapped communication.
EngineResult replay_uncontended(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                                std::span<EngineObserver* const> observers, CriticalPath* path, LinkUse& links);

}  // namespace pipeplan::sim
