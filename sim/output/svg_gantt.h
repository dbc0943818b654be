// A replay's timeline as a standalone SVG Gantt chart: one row per rank,
// one bar per compute action coloured by kind, a millisecond axis and a
// colour legend.
#pragma once

#include <cstddef>
#include <string>

#include "sim/simulate.h"

namespace pipeplan::sim {

// Above this many compute actions the bars carry no micro-batch labels:
// they would be too narrow to read and only grow the file.
inline constexpr std::size_t kSvgMaxLabelledActions = 20000;

// Valid, deterministic SVG (viewBox set, text escaped). Each compute bar is
// a <rect> whose class is its kind letter (F, B, I, W) and whose <title>
// gives the action and its times. Throws InputError when the report has no
// timeline (simulate with record_timeline).
std::string svg_gantt(const SimulationReport& report);

}  // namespace pipeplan::sim
