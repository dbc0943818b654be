// Building blocks of the SVG charts: rough text widths,
// "nice" axis ticks with compact labels, and the plot box with its axes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/xml_escape.h"

namespace pipeplan::charts {

// Characters in UTF-8 text (continuation bytes are not counted).
std::size_t char_count(std::string_view text);

// At most max_chars characters of text, ending in "..." when cut; never
// splits a UTF-8 sequence.
std::string shorten(std::string_view text, std::size_t max_chars);

// A generous estimate of the width in px of text in a sans-serif font, so
// that labels spaced by it do not collide.
double text_width(std::string_view text, double font_px);

// A coordinate with two decimals; anything non-finite is written as 0 so
// that no "nan" or "inf" ever reaches the document.
std::string coord(double value);

struct AxisTicks {
  double lo = 0;  // the axis ends, which are the outer ticks
  double hi = 1;
  double step = 1;  // linear axes: the tick step
  std::vector<double> values;
  std::vector<std::string> labels;
};

// Ticks at a step of 1, 2 or 5 times a power of ten covering [lo, hi], at
// most max_count of them (at least 2). An empty or degenerate range is
// widened first, so the axis always has a positive span.
AxisTicks linear_ticks(double lo, double hi, int max_count);

// Ticks at powers of two covering [lo, hi] (both > 0), every k-th power so
// that there are at most max_count (at least 2).
AxisTicks log2_ticks(double lo, double hi, int max_count);

// A compact label for a tick on an axis stepping by step: "0.25", "10",
// "1.5k", "2M", "1e-3".
std::string tick_label(double value, double step);

// A short, fixed-format number for tooltips (5 significant digits).
std::string value_label(double value);

// The plot area in px and the mapping of data onto it.
struct PlotBox {
  double left = 0;
  double top = 0;
  double right = 1;
  double bottom = 1;
  AxisTicks x;  // unused on category axes
  AxisTicks y;
  bool log_x = false;

  double px(double value) const;
  double py(double value) const;
  double width() const { return right - left; }
  double height() const { return bottom - top; }
};

inline constexpr double kTickFont = 11;
inline constexpr double kLabelFont = 12;
inline constexpr int kMaxTicks = 8;
inline constexpr std::size_t kCategoryChars = 18;  // longer category labels are shortened

// Ticks for a numeric x axis over [lo, hi], linear or at powers of two:
// up to kMaxTicks, fewer until their labels no longer touch across width px.
AxisTicks fitting_x_ticks(double lo, double hi, bool log2, double width);

struct CategoryAxis {
  bool rotate = false;     // labels at 30 degrees, as they do not fit their group
  std::size_t stride = 1;  // every stride-th label, when even rotated ones would collide
  double depth = 24;       // px the labels take under the axis
};

// Lays out category labels under box, moving its left edge right when
// rotated labels would hang off the canvas.
CategoryAxis place_categories(const std::vector<std::string>& labels, PlotBox& box);

// Horizontal grid lines, y tick labels and the axis lines (with a zero line
// when the y range straddles 0).
void write_y_axis(std::string& out, const PlotBox& box);

// Vertical grid lines and x tick labels of a numeric x axis.
void write_x_ticks(std::string& out, const PlotBox& box);

// Category labels centred under each group (shortened to kCategoryChars,
// the full text as a tooltip), placed as axis says.
void write_category_labels(std::string& out, const PlotBox& box, const std::vector<std::string>& labels,
                           const CategoryAxis& axis);

// The x label centred under the plot at baseline px, the y label rotated
// left of it; empty labels are left out, long ones shortened to fit.
void write_axis_labels(std::string& out, std::string_view x_label, std::string_view y_label, const PlotBox& box,
                       double baseline);

}  // namespace pipeplan::charts
