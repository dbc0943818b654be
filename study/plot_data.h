// Turning a study's results into the data of one chart: which points a
// plot shows, its series, its x positions, values in the plot's unit, and
// the closed forms beside them.
#pragma once

#include <vector>

#include "charts/svg_chart.h"
#include "study/runner.h"
#include "study/study_file.h"

namespace pipeplan::study {

// Throws InputError when the plot cannot be drawn from these results (a
// stacked bar over several points per category, say).
charts::ChartSpec chart_for(const StudyFile& study, const PlotSpec& plot, const std::vector<PointOutcome>& outcomes);

// A metric's value in a display unit ("GiB", "GB", "ms", "s", "%" or ""),
// judged from the metric's name: *_bytes and memory_breakdown parts are
// bytes, *_s seconds, *_ms milliseconds, rates and MFU fractions.
double in_unit(double value, const std::string& metric, const std::string& unit);

// "ranks_detail.*.peak_memory_bytes" -> "peak memory", "tokens_per_s" ->
// "tokens/s": a metric's name for axes and tables.
std::string metric_label(const std::string& metric);

// A swept value as legends and tables name it: "tp = 8".
std::string series_label(const std::string& key, const std::string& value);

// The plot's title, or one made from its metrics, axes and the values its
// `where` keeps ("bubble rate by microbatches and schedule (stages = 4)");
// the x axis's label ("rank" for '#').
std::string plot_title(const PlotSpec& plot);
std::string x_label(const PlotSpec& plot);

// Refuses a closed form whose names the point's options and output do
// not give, naming the plot and the names there are.
void check_references(const StudyFile& study, const PlotSpec& plot, const PointOutcome& outcome);

// The points a plot keeps (its `where` filter).
std::vector<const PointOutcome*> plot_points(const PlotSpec& plot, const std::vector<PointOutcome>& outcomes);

}  // namespace pipeplan::study
