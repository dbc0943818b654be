// A replay without the event queue: each rank runs its actions in program
// order, each compute action starting when its rank is free and its input
// has arrived, ranks parked when they wait and woken when the input is
// produced; linear in the actions. It reports to the same observers as the
// engine, rank by rank in program order.
//
// Links either never queue (every transfer starts when issued: the
// dependency graph's timing, used for the critical path and by searches),
// or queue in issue order as the engine's do. A link that carries one
// rank's messages sees them in program order, which is issue order, so the
// replay queues them exactly; a link shared by several ranks' messages (two
// nodes' ranks behind one port) is not ordered here, and when two of its
// transfers overlap the replay says so and the engine must time the
// schedule.
#pragma once

#include <span>

#include "sim/costs.h"
#include "sim/critical_path.h"
#include "sim/engine.h"
#include "sim/observer.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace pipeplan::sim {

struct ReplayOptions {
  bool queue_links = false;      // FIFO links, as the engine's; else transfers never wait
  CriticalPath* path = nullptr;  // filled with the chain of waits that ends last
};

// What the transfers did on their links (the engine's link resources: one
// per direction between ranks, shared between nodes).
struct LinkUse {
  std::size_t transfers = 0;  // cross-rank messages
  int links = 0;              // link resources the schedule's boundaries use
  bool waited = false;        // some transfer queued behind another (queue_links)
  bool unordered = false;     // two transfers overlapped on a link shared by several ranks
};

// Takes the compute-only form (comm actions, if any, are skipped: the
// transfer is implied by the stage-to-rank mapping). Throws ScheduleError
// if the schedule deadlocks (a rank waits for an input never produced).
// With queue_links and no `unordered` link, its times, usage and memory are
// exactly run_engine's with overlapped communication.
EngineResult replay_programs(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                             std::span<EngineObserver* const> observers, const ReplayOptions& options = {},
                             LinkUse* links = nullptr);

}  // namespace pipeplan::sim
