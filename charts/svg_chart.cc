#include "charts/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>

#include "charts/chart_axes.h"

namespace pipeplan::charts {
namespace {

constexpr double kWidth = 760;
constexpr double kHeight = 440;
constexpr double kTop = 44;  // room for the title
constexpr double kRightPad = 14;
constexpr std::size_t kLegendChars = 24;
constexpr std::size_t kMaxCategories = 1000;

// Tableau 10: distinguishable, and readable on white.
constexpr std::array<std::string_view, 10> kPalette{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Values beyond +-1e300 would overflow spans, so they count as gaps too.
bool usable(double value) { return std::isfinite(value) && std::abs(value) <= 1e300; }

std::size_t point_count(const ChartSeries& series) {
  return series.x.empty() ? series.y.size() : std::min(series.x.size(), series.y.size());
}

// Without x values, points sit at 0, 1, 2, ... (category indices for bars).
double x_at(const ChartSeries& series, std::size_t i) {
  return series.x.empty() ? static_cast<double>(i) : series.x[i];
}

// Line charts: whether point i is drawn; a point that is not breaks the line.
bool drawable(const ChartSpec& spec, const ChartSeries& series, std::size_t i) {
  const double x = x_at(series, i);
  if (!usable(x) || !usable(series.y[i])) return false;
  return !spec.log_x || (x >= 0x1p-500 && x <= 0x1p500);
}

// Bar charts: the category of point i, or -1 when it has none to draw in.
long category_of(const ChartSeries& series, std::size_t i) {
  const double x = x_at(series, i);
  if (!usable(series.y[i]) || !usable(x) || x < -0.5 || x >= static_cast<double>(kMaxCategories) - 0.5) return -1;
  return std::lround(x);
}

std::string_view colour_of(const ChartSpec& spec, std::size_t index) {
  const int colour = spec.series[index].colour;
  return kPalette[(colour >= 0 ? static_cast<std::size_t>(colour) : index) % kPalette.size()];
}

const char* dash_attribute(const ChartSeries& series) { return series.dashed ? " stroke-dasharray=\"6 4\"" : ""; }

// Dashed bars (references, budgets) are pale with a dashed outline, so the
// measured bars beside them stand out.
std::string bar_style(const ChartSpec& spec, std::size_t index) {
  const ChartSeries& series = spec.series[index];
  if (!series.dashed) return fmt::format(" fill=\"{}\"", colour_of(spec, index));
  return fmt::format(" fill=\"{0}\" fill-opacity=\"0.3\" stroke=\"{0}\"{1}", colour_of(spec, index),
                     dash_attribute(series));
}

// The given categories, then index numbers for any further ones the series use.
std::vector<std::string> category_labels(const ChartSpec& spec) {
  std::vector<std::string> labels(
      spec.categories.begin(),
      spec.categories.begin() + static_cast<long>(std::min(spec.categories.size(), kMaxCategories)));
  for (const ChartSeries& series : spec.series) {
    for (std::size_t i = 0; i < point_count(series); ++i) {
      const long category = category_of(series, i);
      while (static_cast<long>(labels.size()) <= category) labels.push_back(fmt::format("{}", labels.size()));
    }
  }
  return labels;
}

struct Extent {
  double x_lo = std::numeric_limits<double>::infinity();
  double x_hi = -std::numeric_limits<double>::infinity();
  double y_lo = std::numeric_limits<double>::infinity();
  double y_hi = -std::numeric_limits<double>::infinity();
  bool any() const { return y_lo <= y_hi; }
  void add(double x, double y) {
    x_lo = std::min(x_lo, x);
    x_hi = std::max(x_hi, x);
    y_lo = std::min(y_lo, y);
    y_hi = std::max(y_hi, y);
  }
};

// Stacked bars: series stack up from 0 in order, negative values down.
Extent stack_extent(const ChartSpec& spec, std::size_t categories) {
  std::vector<double> up(categories, 0.0);
  std::vector<double> down(categories, 0.0);
  Extent extent;
  for (const ChartSeries& series : spec.series) {
    for (std::size_t i = 0; i < point_count(series); ++i) {
      const long category = category_of(series, i);
      if (category < 0) continue;
      double& end =
          series.y[i] >= 0 ? up[static_cast<std::size_t>(category)] : down[static_cast<std::size_t>(category)];
      end += series.y[i];
      extent.add(static_cast<double>(category), end);
    }
  }
  return extent;
}

Extent extent_of(const ChartSpec& spec, std::size_t categories) {
  Extent extent;
  if (spec.kind == ChartKind::kStackedBar) {
    extent = stack_extent(spec, categories);
  } else {
    for (const ChartSeries& series : spec.series) {
      for (std::size_t i = 0; i < point_count(series); ++i) {
        const bool drawn = spec.kind == ChartKind::kLine ? drawable(spec, series, i) : category_of(series, i) >= 0;
        if (drawn) extent.add(x_at(series, i), series.y[i]);
      }
    }
  }
  // The limit stays in view beside the data.
  if (spec.limit && usable(spec.limit->y) && extent.any()) extent.add(extent.x_lo, spec.limit->y);
  return extent;
}

struct Layout {
  PlotBox box;
  std::vector<std::string> categories;
  CategoryAxis category_axis;
};

double legend_width(const ChartSpec& spec) {
  if (spec.series.empty()) return 0;
  double widest = 0;
  for (const ChartSeries& series : spec.series) {
    widest = std::max(widest, text_width(shorten(series.name, kLegendChars), kLabelFont));
  }
  return widest + 48;  // gap to the plot, swatch, gap to the text
}

Layout make_layout(const ChartSpec& spec, const Extent& extent, std::vector<std::string> categories) {
  Layout layout;
  layout.categories = std::move(categories);
  PlotBox& box = layout.box;
  box.log_x = spec.kind == ChartKind::kLine && spec.log_x;
  double y_lo = extent.any() ? extent.y_lo : 0;
  double y_hi = extent.any() ? extent.y_hi : 1;
  // Bars grow from 0, so 0 is always on their axis.
  if (spec.kind != ChartKind::kLine || (spec.y_min_zero && y_lo >= 0)) y_lo = std::min(y_lo, 0.0);
  if (spec.kind != ChartKind::kLine) y_hi = std::max(y_hi, 0.0);
  box.y = linear_ticks(y_lo, y_hi, kMaxTicks);
  double widest = 0;
  for (const std::string& label : box.y.labels) widest = std::max(widest, text_width(label, kTickFont));
  box.left = std::clamp(widest + 40, 56.0, 220.0);  // tick labels and the rotated y label
  box.top = kTop;
  box.right = kWidth - kRightPad - legend_width(spec);
  double under_axis = 24;
  if (spec.kind == ChartKind::kLine) {
    const bool any = extent.any();
    box.x = spec.log_x ? fitting_x_ticks(any ? extent.x_lo : 1, any ? extent.x_hi : 2, true, box.width())
                       : fitting_x_ticks(any ? extent.x_lo : 0, any ? extent.x_hi : 1, false, box.width());
  } else {
    layout.category_axis = place_categories(layout.categories, box);
    under_axis = layout.category_axis.depth;
  }
  box.bottom = kHeight - under_axis - 26;  // and the x label below
  return layout;
}

void write_header(std::string& out, const ChartSpec& spec) {
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
                 "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, sans-serif\" role=\"img\" "
                 "aria-label=\"{2}\">\n<rect class=\"background\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
                 kWidth, kHeight, escape_xml(spec.title));
  if (spec.title.empty()) return;
  // Long titles shrink, down to 10 px, then are cut.
  const double room = kWidth - 20;
  const double font = std::clamp(16 * room / text_width(spec.title, 16), 10.0, 16.0);
  const auto fits = static_cast<std::size_t>(room / (font * 0.62));
  fmt::format_to(it,
                 "<text class=\"title\" x=\"{}\" y=\"27\" text-anchor=\"middle\" font-size=\"{}\" "
                 "font-weight=\"bold\" fill=\"#111\">{}</text>\n",
                 kWidth / 2, coord(font), escape_xml(shorten(spec.title, fits)));
}

// Solid series after `index`: each one is drawn on top of this one.
std::size_t solid_after(const ChartSpec& spec, std::size_t index) {
  std::size_t count = 0;
  for (std::size_t i = index + 1; i < spec.series.size(); ++i) count += spec.series[i].dashed ? 0 : 1;
  return count;
}

// Earlier series are wider and their markers larger rings, so a series
// drawn over another with the same values leaves it visible.
double stroke_width(const ChartSpec& spec, std::size_t index) {
  if (spec.series[index].dashed) return 1.5;
  return std::min(2.0 + 1.5 * static_cast<double>(solid_after(spec, index)), 6.5);
}

// A darker shade of a palette colour ("#1f77b4"): closed forms are drawn
// over their own series, so they must differ from it.
std::string darker(std::string_view colour) {
  unsigned value = 0;
  std::from_chars(colour.data() + 1, colour.data() + colour.size(), value, 16);
  auto channel = [&](int shift) { return static_cast<unsigned>(((value >> shift) & 0xffu) * 0.55); };
  return fmt::format("#{:02x}{:02x}{:02x}", channel(16), channel(8), channel(0));
}

std::string line_colour(const ChartSpec& spec, std::size_t index) {
  const std::string_view colour = colour_of(spec, index);
  return spec.series[index].dashed ? darker(colour) : std::string(colour);
}

void write_polyline(std::string& out, const ChartSpec& spec, std::size_t index, const std::string& points) {
  const ChartSeries& series = spec.series[index];
  fmt::format_to(std::back_inserter(out),
                 "<polyline class=\"series-{}\" data-series=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
                 "stroke-width=\"{}\" stroke-linejoin=\"round\" stroke-linecap=\"round\"{}/>\n",
                 index, escape_xml(series.name), points, line_colour(spec, index), coord(stroke_width(spec, index)),
                 dash_attribute(series));
}

// One polyline per run of drawable points (a lone point is repeated so its
// round caps show a dot), then a marker with a tooltip per point.
void write_line_series(std::string& out, const ChartSpec& spec, const PlotBox& box, std::size_t index) {
  const ChartSeries& series = spec.series[index];
  std::string points;
  std::size_t run = 0;
  for (std::size_t i = 0; i <= point_count(series); ++i) {
    if (i < point_count(series) && drawable(spec, series, i)) {
      if (run++ > 0) points += ' ';
      points += fmt::format("{},{}", coord(box.px(x_at(series, i))), coord(box.py(series.y[i])));
      continue;
    }
    if (run == 1) points = fmt::format("{0} {0}", points);
    if (run > 0) write_polyline(out, spec, index, points);
    points.clear();
    run = 0;
  }
  if (series.dashed) return;
  auto it = std::back_inserter(out);
  const std::size_t above = solid_after(spec, index);
  const double radius = std::min(3.0 + static_cast<double>(above), 6.0);
  // The top series has filled dots; those under it rings around them.
  const std::string fill = above == 0 ? std::string(colour_of(spec, index)) : "white";
  const std::string stroke = above == 0 ? "white" : std::string(colour_of(spec, index));
  for (std::size_t i = 0; i < point_count(series); ++i) {
    if (!drawable(spec, series, i)) continue;
    const double x = x_at(series, i);
    fmt::format_to(it,
                   "<circle class=\"series-{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" "
                   "stroke-width=\"1.5\"><title>{}</title></circle>\n",
                   index, coord(box.px(x)), coord(box.py(series.y[i])), coord(radius), fill, stroke,
                   escape_xml(fmt::format("{}: {}, {}", series.name, value_label(x), value_label(series.y[i]))));
  }
}

// A bar from value `from` to value `to` at [x, x + width] px.
void write_bar(std::string& out, const ChartSpec& spec, const Layout& layout, std::size_t index, std::size_t point,
               double from, double to, double x, double width) {
  const ChartSeries& series = spec.series[index];
  const double y0 = layout.box.py(from);
  const double y1 = layout.box.py(to);
  const std::string& category = layout.categories[static_cast<std::size_t>(category_of(series, point))];
  fmt::format_to(std::back_inserter(out),
                 "<rect class=\"series-{}\" data-series=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                 "{}><title>{}</title></rect>\n",
                 index, escape_xml(series.name), coord(x), coord(std::min(y0, y1)), coord(width),
                 coord(std::abs(y1 - y0)), bar_style(spec, index),
                 escape_xml(fmt::format("{}: {}, {}", series.name, category, value_label(series.y[point]))));
}

// Series side by side within each category's group (80% of its width).
void write_bar_series(std::string& out, const ChartSpec& spec, const Layout& layout, std::size_t index) {
  const double group = layout.box.width() / static_cast<double>(layout.categories.size());
  const double width = group * 0.8 / static_cast<double>(spec.series.size());
  const ChartSeries& series = spec.series[index];
  for (std::size_t i = 0; i < point_count(series); ++i) {
    const long category = category_of(series, i);
    if (category < 0) continue;
    const double x =
        layout.box.left + (static_cast<double>(category) + 0.1) * group + static_cast<double>(index) * width;
    write_bar(out, spec, layout, index, i, 0, series.y[i], x, width);
  }
}

// All series stacked in order per category, negative values below 0.
void write_stacked_series(std::string& out, const ChartSpec& spec, const Layout& layout) {
  const std::size_t categories = layout.categories.size();
  const double group = layout.box.width() / static_cast<double>(categories);
  std::vector<double> up(categories, 0.0);
  std::vector<double> down(categories, 0.0);
  for (std::size_t index = 0; index < spec.series.size(); ++index) {
    const ChartSeries& series = spec.series[index];
    for (std::size_t i = 0; i < point_count(series); ++i) {
      const long category = category_of(series, i);
      if (category < 0) continue;
      double& end =
          series.y[i] >= 0 ? up[static_cast<std::size_t>(category)] : down[static_cast<std::size_t>(category)];
      const double x = layout.box.left + (static_cast<double>(category) + 0.2) * group;
      write_bar(out, spec, layout, index, i, end, end + series.y[i], x, group * 0.6);
      end += series.y[i];
    }
  }
}

void write_swatch(std::string& out, const ChartSpec& spec, std::size_t index, double x, double y) {
  auto it = std::back_inserter(out);
  const ChartSeries& series = spec.series[index];
  const std::string_view colour = colour_of(spec, index);
  if (spec.kind != ChartKind::kLine) {
    fmt::format_to(it, "<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"10\"{}/>", coord(x + 3), coord(y - 5),
                   bar_style(spec, index));
    return;
  }
  fmt::format_to(it, "<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>",
                 coord(x), coord(x + 22), coord(y), line_colour(spec, index), dash_attribute(series));
  if (!series.dashed) {
    fmt::format_to(it, "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>", coord(x + 11), coord(y), colour);
  }
}

// The limit as a red dashed line across the plot, labelled at its right end.
void write_limit(std::string& out, const ChartSpec& spec, const PlotBox& box) {
  if (!spec.limit || !usable(spec.limit->y)) return;
  const double y = box.py(spec.limit->y);
  fmt::format_to(std::back_inserter(out),
                 "<line class=\"limit\" x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"#c00000\" "
                 "stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n"
                 "<text class=\"limit-label\" x=\"{1}\" y=\"{3}\" text-anchor=\"end\" font-size=\"{4}\" "
                 "fill=\"#c00000\">{5}</text>\n",
                 coord(box.left), coord(box.right), coord(y), coord(y - 4), coord(kLabelFont),
                 escape_xml(spec.limit->label));
}

// One entry per series, right of the plot, rows shrinking when many.
void write_legend(std::string& out, const ChartSpec& spec, const PlotBox& box) {
  if (spec.series.empty()) return;
  auto it = std::back_inserter(out);
  const double pitch = std::min(18.0, box.height() / static_cast<double>(spec.series.size()));
  const double font = std::clamp(pitch - 4, 6.0, kLabelFont);
  const double x = box.right + 20;
  for (std::size_t index = 0; index < spec.series.size(); ++index) {
    const std::string& name = spec.series[index].name;
    const double y = box.top + pitch * (static_cast<double>(index) + 0.5);
    fmt::format_to(it, "<g class=\"legend-entry\" data-legend=\"{}\">", escape_xml(name));
    write_swatch(out, spec, index, x, y);
    const std::string shown = shorten(name, kLegendChars);
    fmt::format_to(it, "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#111\">", coord(x + 28), coord(y + font / 3),
                   coord(font));
    if (shown != name) fmt::format_to(it, "<title>{}</title>", escape_xml(name));
    fmt::format_to(it, "{}</text></g>\n", escape_xml(shown));
  }
}

}  // namespace

std::string render_chart_svg(const ChartSpec& spec) {
  std::vector<std::string> categories;
  if (spec.kind != ChartKind::kLine) categories = category_labels(spec);
  const Extent extent = extent_of(spec, categories.size());
  const Layout layout = make_layout(spec, extent, std::move(categories));
  const PlotBox& box = layout.box;
  std::string out;
  write_header(out, spec);
  if (spec.kind == ChartKind::kLine) {
    write_x_ticks(out, box);
  } else {
    write_category_labels(out, box, layout.categories, layout.category_axis);
  }
  write_y_axis(out, box);
  write_axis_labels(out, spec.x_label, spec.y_label, box, kHeight - 10);
  for (std::size_t index = 0; index < spec.series.size(); ++index) {
    if (spec.kind == ChartKind::kLine) write_line_series(out, spec, box, index);
    if (spec.kind == ChartKind::kBar) write_bar_series(out, spec, layout, index);
  }
  if (spec.kind == ChartKind::kStackedBar) write_stacked_series(out, spec, layout);
  write_limit(out, spec, box);
  write_legend(out, spec, box);
  if (!extent.any()) {
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"no-data\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" "
                   "fill=\"#888\">no data</text>\n",
                   coord((box.left + box.right) / 2), coord((box.top + box.bottom) / 2));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace pipeplan::charts
