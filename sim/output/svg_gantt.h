// A replay's timeline as a standalone SVG Gantt chart: one row per rank,
// one bar per compute action coloured by kind, a millisecond axis and a
// colour legend.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sim/simulate.h"

namespace pipeplan::sim {

// Above this many compute actions the bars carry no micro-batch labels:
// they would be too narrow to read and only grow the file.
inline constexpr std::size_t kSvgMaxLabelledActions = 20000;

// The part of the timeline to draw: [start, end] in seconds, or as shares
// of the timeline (0.25 = a quarter of the way) when `fraction`; end 0 runs
// to the end.
struct GanttWindow {
  double start = 0;
  double end = 0;
  bool fraction = false;
};

// "20ms:80ms" (a plain number is ms) or "0%:25%". Throws InputError naming
// --window.
GanttWindow parse_gantt_window(std::string_view text);

// One simulated schedule of a chart; an empty title is the default line
// (schedule, shape, makespan, bubble).
struct GanttPanel {
  const SimulationReport* report = nullptr;
  std::string title;
};

// Valid, deterministic SVG (viewBox set, text escaped). Each compute bar is
// a <rect> whose class is its kind letter (F, B, I, W) and whose <title>
// gives the action and its times; bars outside the window are left out and
// those across its edges cut. Throws InputError when the report has no
// timeline (simulate with record_timeline) or the window is empty.
std::string svg_gantt(const SimulationReport& report, const GanttWindow& window = {});

// Several schedules stacked on one time scale (simulate --schedule all).
std::string svg_gantt_panels(const std::vector<GanttPanel>& panels, const GanttWindow& window = {});

}  // namespace pipeplan::sim
