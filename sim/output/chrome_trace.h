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
inline constexpr int kExpertCommTid = 3000;  // a mixture of experts' all-to-all
inline constexpr int kHostCopyTid = 4000;    // activation offload's copies over the host link

// One process per rank (pid = rank, named with its node where the report
// places it): compute slices coloured by kind,
// blocking comm waits, transfers on both ends joined by flow arrows, the
// all-to-all each pass carries on a track of its own (from the pass's
// start, for as long as it lasts, with what its overlapped pair hid), and an
// activation-memory counter. Deterministic. Throws InputError when the
// report has no timeline (simulate with record_timeline).
std::string chrome_trace_json(const SimulationReport& report);

}  // namespace pipeplan::sim
