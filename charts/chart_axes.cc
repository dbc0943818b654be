#include "charts/chart_axes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

namespace pipeplan::charts {
namespace {

// Fixed-point text of value with at most `decimals` decimals, trailing
// zeros dropped: ticks read "0.1", not "0.10".
std::string trimmed_fixed(double value, int decimals) {
  std::string text = fmt::format("{:.{}f}", value, std::clamp(decimals, 0, 15));
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

// Decimals that show every multiple of step exactly (step is 1, 2 or 5
// times a power of ten); the slack absorbs log10 rounding.
int decimals_for(double step) { return std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-6))); }

std::string scientific(double value, double step) {
  int exponent = static_cast<int>(std::floor(std::log10(std::abs(value))));
  const double unit = std::pow(10.0, exponent);
  const int decimals = std::min(decimals_for(step / unit), 6);
  std::string mantissa = trimmed_fixed(value / unit, decimals);
  // log10 may land just below an exact power, giving "10e-4" for 1e-3.
  if (mantissa == "10" || mantissa == "-10") {
    ++exponent;
    mantissa = mantissa.front() == '-' ? "-1" : "1";
  }
  return fmt::format("{}e{}", mantissa, exponent);
}

// Widens an empty, inverted or degenerate range so that it has a positive
// span that ticks can divide.
std::pair<double, double> widened(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return {0, 1};
  const double magnitude = std::max(std::abs(lo), std::abs(hi));
  if (hi - lo > magnitude * 1e-9) return {lo, hi};
  if (magnitude == 0) return {0, 1};
  return {lo - magnitude * 0.1, hi + magnitude * 0.1};
}

std::string log2_label(int exponent) {
  // Small powers read best in full; the rest as powers of two.
  if (exponent >= 0 && exponent <= 13) return fmt::format("{}", 1LL << exponent);
  if (exponent < 0 && exponent >= -3) return trimmed_fixed(std::ldexp(1.0, exponent), -exponent);
  return fmt::format("2^{}", exponent);
}

long long floor_div(long long a, long long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace


std::size_t char_count(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string shorten(std::string_view text, std::size_t max_chars) {
  if (char_count(text) <= max_chars) return std::string(text);
  const std::size_t keep = max_chars > 3 ? max_chars - 3 : 0;
  std::size_t chars = 0;
  std::size_t end = 0;
  for (; end < text.size(); ++end) {
    const bool starts_char = (static_cast<unsigned char>(text[end]) & 0xC0) != 0x80;
    if (starts_char && chars++ == keep) break;
  }
  std::string kept(text.substr(0, end));
  while (!kept.empty() && kept.back() == ' ') kept.pop_back();
  return kept + "...";
}

double text_width(std::string_view text, double font_px) {
  return static_cast<double>(char_count(text)) * font_px * 0.62;
}

std::string coord(double value) {
  return fmt::format("{:.2f}", std::isfinite(value) ? std::clamp(value, -1e5, 1e5) : 0.0);
}

AxisTicks linear_ticks(double lo, double hi, int max_count) {
  std::tie(lo, hi) = widened(lo, hi);
  // Three ticks always fit (a step wider than the span); two may not when
  // the range straddles a multiple of the step.
  max_count = std::max(max_count, 3);
  const double base = std::pow(10.0, std::floor(std::log10((hi - lo) / max_count)) - 1);
  AxisTicks ticks;
  long long first = 0;
  long long last = 0;
  // The smallest 1-2-5 step that gives at most max_count ticks; the one
  // before it gave more, so there are rarely fewer than max_count / 2.
  bool found = false;
  for (int decade = 0; decade < 6 && !found; ++decade) {
    for (const double mult : {1.0, 2.0, 5.0}) {
      ticks.step = mult * base * std::pow(10.0, decade);
      first = static_cast<long long>(std::floor(lo / ticks.step + 1e-9));
      last = static_cast<long long>(std::ceil(hi / ticks.step - 1e-9));
      found = last - first + 1 <= max_count;
      if (found) break;
    }
  }
  for (long long i = first; i <= last; ++i) {
    const double value = static_cast<double>(i) * ticks.step;
    ticks.values.push_back(std::abs(value) < ticks.step * 1e-9 ? 0.0 : value);
    ticks.labels.push_back(tick_label(ticks.values.back(), ticks.step));
  }
  ticks.lo = ticks.values.front();
  ticks.hi = ticks.values.back();
  return ticks;
}

AxisTicks log2_ticks(double lo, double hi, int max_count) {
  // Exponents stay within +-500 so that every power computed is finite.
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) std::tie(lo, hi) = std::pair{1.0, 2.0};
  lo = std::clamp(lo, 0x1p-500, 0x1p500);
  hi = std::clamp(hi, lo, 0x1p500);
  long long e0 = static_cast<long long>(std::floor(std::log2(lo) + 1e-9));
  long long e1 = static_cast<long long>(std::ceil(std::log2(hi) - 1e-9));
  if (e1 <= e0) e1 = e0 + 1;
  max_count = std::max(max_count, 2);
  long long stride = 1;
  // Ends aligned to multiples of the stride, so ticks read 1, 4, 16, ...
  while ((floor_div(e1 + stride - 1, stride) - floor_div(e0, stride)) + 1 > max_count) ++stride;
  AxisTicks ticks;
  ticks.step = static_cast<double>(stride);
  for (long long k = floor_div(e0, stride); k <= floor_div(e1 + stride - 1, stride); ++k) {
    const int exponent = static_cast<int>(k * stride);
    ticks.values.push_back(std::ldexp(1.0, exponent));
    ticks.labels.push_back(log2_label(exponent));
  }
  ticks.lo = ticks.values.front();
  ticks.hi = ticks.values.back();
  return ticks;
}

std::string tick_label(double value, double step) {
  if (!std::isfinite(value) || !(step > 0)) return "0";
  const double magnitude = std::abs(value);
  if (magnitude < step * 1e-6) return "0";
  if (magnitude >= 1e15) return scientific(value, step);
  static constexpr std::array<std::pair<double, const char*>, 4> kSuffixes{
      {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, suffix] : kSuffixes) {
    if (magnitude >= scale) return trimmed_fixed(value / scale, decimals_for(step / scale)) + suffix;
  }
  // More than three decimals read better in scientific notation.
  if (decimals_for(step) > 3) return scientific(value, step);
  return trimmed_fixed(value, decimals_for(step));
}

std::string value_label(double value) {
  if (!std::isfinite(value)) return "n/a";
  return fmt::format("{:.5g}", value);
}

double PlotBox::px(double value) const {
  if (log_x) {
    const double lo = std::log2(x.lo);
    return left + (std::log2(value) - lo) / (std::log2(x.hi) - lo) * width();
  }
  return left + (value - x.lo) / (x.hi - x.lo) * width();
}

double PlotBox::py(double value) const { return bottom - (value - y.lo) / (y.hi - y.lo) * height(); }

void write_y_axis(std::string& out, const PlotBox& box) {
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < box.y.values.size(); ++i) {
    const double y = box.py(box.y.values[i]);
    fmt::format_to(it, "<line class=\"grid-y\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e6e6e6\"/>\n",
                   coord(box.left - 4), coord(y), coord(box.right));
    fmt::format_to(it,
                   "<text class=\"tick-y\" x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"{}\" "
                   "fill=\"#333\">{}</text>\n",
                   coord(box.left - 7), coord(y + 4), kTickFont, escape_xml(box.y.labels[i]));
  }
  if (box.y.lo < 0 && box.y.hi > 0) {
    fmt::format_to(it, "<line class=\"zero\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#999\"/>\n",
                   coord(box.left), coord(box.py(0)), coord(box.right));
  }
  fmt::format_to(it, "<path class=\"axis\" d=\"M{} {}V{}H{}\" fill=\"none\" stroke=\"#333\"/>\n", coord(box.left),
                 coord(box.top), coord(box.bottom), coord(box.right));
}

void write_x_ticks(std::string& out, const PlotBox& box) {
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < box.x.values.size(); ++i) {
    const double x = box.px(box.x.values[i]);
    fmt::format_to(it, "<line class=\"grid-x\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e6e6e6\"/>\n",
                   coord(x), coord(box.top), coord(box.bottom + 4));
    fmt::format_to(it,
                   "<text class=\"tick-x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{}\" "
                   "fill=\"#333\">{}</text>\n",
                   coord(x), coord(box.bottom + 17), kTickFont, escape_xml(box.x.labels[i]));
  }
}

AxisTicks fitting_x_ticks(double lo, double hi, bool log2, double width) {
  AxisTicks ticks;
  for (int count = kMaxTicks; count >= 3; --count) {
    ticks = log2 ? log2_ticks(lo, hi, count) : linear_ticks(lo, hi, count);
    double widest = 0;
    for (const std::string& label : ticks.labels) widest = std::max(widest, text_width(label, kTickFont));
    if (width / static_cast<double>(ticks.values.size() - 1) >= widest + 8) break;
  }
  return ticks;
}

CategoryAxis place_categories(const std::vector<std::string>& labels, PlotBox& box) {
  CategoryAxis axis;
  if (labels.empty()) return axis;
  double widest = 0;
  for (const std::string& label : labels)
    widest = std::max(widest, text_width(shorten(label, kCategoryChars), kTickFont));
  double group = box.width() / static_cast<double>(labels.size());
  axis.rotate = widest > group - 6;
  if (!axis.rotate) return axis;
  // Rotated labels hang left of their group's centre by cos(30 deg) of their width.
  box.left = std::max(box.left, widest * 0.87 - group / 2 + 8);
  group = box.width() / static_cast<double>(labels.size());
  // Parallel rotated labels are group * sin(30 deg) apart and need a line each.
  axis.stride = static_cast<std::size_t>(std::ceil(2 * (kTickFont + 3) / group));
  axis.depth = 16 + widest * 0.5;
  return axis;
}

void write_category_labels(std::string& out, const PlotBox& box, const std::vector<std::string>& labels,
                           const CategoryAxis& axis) {
  if (labels.empty()) return;
  auto it = std::back_inserter(out);
  const bool rotate = axis.rotate;
  const double group = box.width() / static_cast<double>(labels.size());
  for (std::size_t i = 0; i < labels.size(); i += std::max<std::size_t>(axis.stride, 1)) {
    const std::string x = coord(box.left + (static_cast<double>(i) + 0.5) * group);
    const std::string y = coord(box.bottom + (rotate ? 12 : 17));
    const std::string shown = shorten(labels[i], kCategoryChars);
    fmt::format_to(it, "<text class=\"category\" x=\"{0}\" y=\"{1}\" font-size=\"{2}\" fill=\"#333\" ", x, y,
                   kTickFont);
    if (rotate) {
      fmt::format_to(it, "text-anchor=\"end\" transform=\"rotate(-30 {} {})\">", x, y);
    } else {
      out += "text-anchor=\"middle\">";
    }
    // A shortened label keeps its full text as a tooltip.
    if (shown != labels[i]) fmt::format_to(it, "<title>{}</title>", escape_xml(labels[i]));
    fmt::format_to(it, "{}</text>\n", escape_xml(shown));
  }
}

void write_axis_labels(std::string& out, std::string_view x_label, std::string_view y_label, const PlotBox& box,
                       double baseline) {
  auto it = std::back_inserter(out);
  const double per_char = kLabelFont * 0.62;
  if (!x_label.empty()) {
    fmt::format_to(it,
                   "<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{}\" "
                   "fill=\"#111\">{}</text>\n",
                   coord((box.left + box.right) / 2), coord(baseline), kLabelFont,
                   escape_xml(shorten(x_label, static_cast<std::size_t>(box.width() / per_char))));
  }
  if (!y_label.empty()) {
    const std::string y = coord((box.top + box.bottom) / 2);
    fmt::format_to(it,
                   "<text class=\"y-label\" x=\"16\" y=\"{0}\" transform=\"rotate(-90 16 {0})\" "
                   "text-anchor=\"middle\" font-size=\"{1}\" fill=\"#111\">{2}</text>\n",
                   y, kLabelFont, escape_xml(shorten(y_label, static_cast<std::size_t>(box.height() / per_char))));
  }
}

}  // namespace pipeplan::charts
