// Turning a study's results into the data of one chart: which points a
// plot shows, its series, its x positions, values in the plot's unit, and
// the closed forms beside them.
#pragma once

#include <vector>

#include "study/runner.h"
#include "study/study_file.h"
#include "study/svg_chart.h"

namespace pipeplan::study {

// Throws InputError when the plot cannot be drawn from these results (a
// stacked bar over several points per category, say).
ChartSpec chart_for(const StudyFile& study, const PlotSpec& plot, const std::vector<PointOutcome>& outcomes);

// A metric's value in a display unit ("GiB", "GB", "ms", "s", "%" or ""),
// judged from the metric's name: *_bytes and memory_breakdown parts are
// bytes, *_s seconds, *_ms milliseconds, rates and MFU fractions.
double in_unit(double value, const std::string& metric, const std::string& unit);

// The points a plot keeps (its `where` filter).
std::vector<const PointOutcome*> plot_points(const PlotSpec& plot, const std::vector<PointOutcome>& outcomes);

}  // namespace pipeplan::study
