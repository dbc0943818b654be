// A replay's timeline in the Chrome Trace Event Format, for ui.perfetto.dev
// and chrome://tracing.
#pragma once

#include <string>

#include "sim/simulate.h"

namespace pipeplan::sim {

// Thread ids inside each rank's process. Sends and receives get one thread
// per peer: a link carries one transfer at a time, so the slices on one
// thread never overlap.
inline constexpr int kComputeTid = 0;
inline constexpr int kSendTidBase = 1000;  // + destination rank
inline constexpr int kRecvTidBase = 2000;  // + source rank

// One process per rank (pid = rank): compute slices coloured by kind,
// blocking comm waits, transfers on both ends joined by flow arrows, and an
// activation-memory counter. Deterministic. Throws InputError when the
// report has no timeline (simulate with record_timeline).
std::string chrome_trace_json(const SimulationReport& report);

}  // namespace pipeplan::sim
