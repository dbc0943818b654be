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
#include "sim/engine.h"
#include "sim/observer.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace pipeplan::sim {

// Takes the compute-only form (comm actions, if any, are skipped: the
// transfer is implied by the stage-to-rank mapping). Throws ScheduleError
// if the schedule deadlocks.
EngineResult replay_uncontended(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                                std::span<EngineObserver* const> observers);

}  // namespace pipeplan::sim
