// A replay's timeline as a terminal Gantt chart, for small cases:
//
//   rank 0 |F0F1F2B0B1B2|
//   rank 1 |.F0F1F2B0B1B|
#pragma once

#include <string>

#include "sim/simulate.h"

namespace pipeplan::sim {

// Charts wider than this many ranks would not fit a terminal.
inline constexpr int kAsciiMaxRanks = 64;

// One line per rank over `width` columns (at least 1): each column shows
// the compute action running at the column's midpoint, as its label (kind
// letter and micro-batch, "F12") at the start of its span when the span is
// wide enough, else the kind letter; '.' is idle. Then a legend line and a
// scale line. Empty when the report has no timeline or more than
// kAsciiMaxRanks ranks.
std::string ascii_gantt(const SimulationReport& report, int width = 100);

}  // namespace pipeplan::sim
