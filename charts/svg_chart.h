// Charts as standalone SVG, drawn by pipeplan: axes with "nice" ticks and
// units, a legend, one colour per series, dashed reference lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pipeplan::charts {

enum class ChartKind { kLine, kBar, kStackedBar };

struct ChartSeries {
  std::string name;
  std::vector<double> x;   // line charts: numeric x; bar charts: index into categories
  std::vector<double> y;   // NaN entries are gaps (a failed point)
  bool dashed = false;     // reference curves (closed forms) draw dashed
  int colour = -1;         // palette index; -1: by position. A reference can share its series' colour.
};

// A horizontal line across the plot (the memory each rank may use).
struct ChartLimit {
  std::string label;
  double y = 0;
};

struct ChartSpec {
  ChartKind kind = ChartKind::kLine;
  std::string title;
  std::string x_label;                  // with unit, e.g. "micro-batches"
  std::string y_label;                  // with unit, e.g. "peak memory (GiB)"
  std::vector<std::string> categories;  // bar charts: the x labels, in order
  std::vector<ChartSeries> series;
  bool log_x = false;                   // line charts: logarithmic x axis (base 2 ticks)
  bool y_min_zero = true;               // start the y axis at 0 when all values are >= 0
  std::optional<ChartLimit> limit;      // drawn red and dashed, and kept in view
};

// A complete <svg> document (valid XML, viewBox set, text escaped). Line
// charts: one polyline with markers per series, each series a little
// thinner than the one before and with its own marker shape, so lines that
// coincide stay visible. Bar charts: series grouped
// side by side per category. Stacked bars: series stacked per category, in
// order. Empty series are listed in the legend but draw nothing.
std::string render_chart_svg(const ChartSpec& spec);

}  // namespace pipeplan::charts
