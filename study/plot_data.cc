#include "study/plot_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "study/expression.h"
#include "study/point_command.h"

namespace pipeplan::study {
namespace {

constexpr double kGap = std::numeric_limits<double>::quiet_NaN();

std::string value_text(double value) { return fmt::format("{:.4g}", value); }

// Byte counts: *_bytes, and the parts of a memory breakdown.
bool is_bytes_metric(const std::string& metric) {
  return metric.find("bytes") != std::string::npos || metric.find("memory_breakdown") != std::string::npos;
}

double leading_number(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  return end == text.c_str() ? kGap : value;
}

std::vector<std::string> distinct(const std::vector<const PointOutcome*>& points, const std::string& key) {
  std::vector<std::string> values;
  for (const PointOutcome* outcome : points) {
    const std::string value = key.empty() ? "" : outcome->point.value_of(key);
    if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
  }
  return values;
}

// A scalar metric as a number in the plot's unit; NaN for failed points and texts.
double scalar(const PointOutcome& outcome, const std::string& metric, const std::string& unit) {
  if (!outcome.error.empty() || !outcome.metrics.contains(metric)) return kGap;
  const auto& value = outcome.metrics.at(metric);
  return value.is_number() ? in_unit(value.get<double>(), metric, unit) : kGap;
}

std::vector<double> listed(const PointOutcome& outcome, const std::string& metric, const std::string& unit) {
  std::vector<double> values;
  if (!outcome.error.empty() || !outcome.metrics.contains(metric) || outcome.metrics.at(metric).is_null()) {
    return values;
  }
  const auto& list = outcome.metrics.at(metric);
  if (!list.is_array()) throw InputError(fmt::format("x '#' needs a list metric ('...*...'), not '{}'", metric));
  for (const auto& item : list) values.push_back(item.is_number() ? in_unit(item.get<double>(), metric, unit) : kGap);
  return values;
}

std::string y_label(const PlotSpec& plot) {
  std::string names = plot.kind == PlotKind::kStackedBar ? "memory" : metric_label(plot.y.front());
  if (plot.kind != PlotKind::kStackedBar && plot.y.size() > 1) {
    for (std::size_t i = 1; i < plot.y.size(); ++i) names += ", " + metric_label(plot.y[i]);
  }
  return plot.y_unit.empty() ? names : fmt::format("{} ({})", names, plot.y_unit);
}

// A name of a closed form: the point's option ('_' for '-'), else a number
// of the point's output ("stages", "ranks").
std::optional<double> reference_value(const StudyFile& study, const PointOutcome& outcome, const std::string& name) {
  std::string key = name;
  std::replace(key.begin(), key.end(), '_', '-');
  const std::string value = option_value(study, outcome.point, key);
  if (!value.empty()) return leading_number(value);
  if (outcome.fields.contains(name) && outcome.fields.at(name).is_number()) return outcome.fields.at(name).get<double>();
  return std::nullopt;
}

void add_references(const StudyFile& study, const PlotSpec& plot, const std::vector<const PointOutcome*>& points,
                    charts::ChartSpec& chart, const std::vector<std::string>& series_names) {
  for (const Reference& reference : plot.references) {
    const Expression expression = parse_expression(reference.expression);
    charts::ChartSeries curve{reference.label, {}, {}, true, -1};
    for (const PointOutcome* outcome : points) {
      if (!reference.series.empty() && outcome->point.value_of(plot.series) != reference.series) continue;
      if (!outcome->error.empty()) continue;  // its output's numbers are missing
      const double y = expression.evaluate(
          [&](const std::string& name) { return reference_value(study, *outcome, name); });
      curve.x.push_back(leading_number(outcome->point.value_of(plot.x)));
      curve.y.push_back(plot.y_unit == "%" ? y * 100 : y);
    }
    const auto owner = std::find(series_names.begin(), series_names.end(), reference.series);
    if (owner != series_names.end()) curve.colour = static_cast<int>(owner - series_names.begin());
    chart.series.push_back(std::move(curve));
  }
}

// The memory each rank may use, in the plot's unit, when the plot shows
// bytes and its points share one limit.
std::optional<charts::ChartLimit> memory_limit(const PlotSpec& plot, const std::vector<const PointOutcome*>& points) {
  if (!std::any_of(plot.y.begin(), plot.y.end(), is_bytes_metric)) return std::nullopt;
  std::optional<double> limit;
  for (const PointOutcome* outcome : points) {
    if (!outcome->fields.contains("memory_limit_bytes")) continue;
    const double value = outcome->fields.at("memory_limit_bytes").get<double>();
    if (limit && *limit != value) return std::nullopt;
    limit = value;
  }
  if (!limit) return std::nullopt;
  const double shown = in_unit(*limit, "memory_limit_bytes", plot.y_unit);
  return charts::ChartLimit{fmt::format("limit {} {}", value_text(shown), plot.y_unit.empty() ? "B" : plot.y_unit),
                            shown};
}

void line_chart(const StudyFile& study, const PlotSpec& plot, const std::vector<const PointOutcome*>& points,
                charts::ChartSpec& chart) {
  const std::vector<std::string> names = distinct(points, plot.series);
  for (const std::string& name : names) {
    for (const std::string& metric : plot.y) {
      charts::ChartSeries series{plot.series.empty() ? metric_label(metric) : series_label(plot.series, name), {}, {},
                                 false, -1};
      if (!plot.series.empty() && plot.y.size() > 1) series.name += ", " + metric_label(metric);
      std::vector<std::pair<double, double>> xy;
      for (const PointOutcome* outcome : points) {
        if (outcome->point.value_of(plot.series) != name) continue;
        xy.emplace_back(leading_number(outcome->point.value_of(plot.x)), scalar(*outcome, metric, plot.y_unit));
      }
      std::sort(xy.begin(), xy.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [x, y] : xy) {
        series.x.push_back(x);
        series.y.push_back(y);
      }
      chart.series.push_back(std::move(series));
    }
  }
  add_references(study, plot, points, chart, names);
}

// Bars over the entries of a list metric (ranks, stages), one series per point.
void indexed_bars(const PlotSpec& plot, const std::vector<const PointOutcome*>& points, charts::ChartSpec& chart) {
  std::size_t width = 0;
  for (const PointOutcome* outcome : points) {
    const std::string name = plot.series.empty() ? fmt::format("point {}", outcome->point.index)
                                                 : series_label(plot.series, outcome->point.value_of(plot.series));
    charts::ChartSeries series{name, {}, listed(*outcome, plot.y.front(), plot.y_unit), false, -1};
    for (std::size_t i = 0; i < series.y.size(); ++i) series.x.push_back(static_cast<double>(i));
    width = std::max(width, series.y.size());
    chart.series.push_back(std::move(series));
  }
  for (std::size_t i = 0; i < width; ++i) chart.categories.push_back(std::to_string(i));
}

void category_bars(const PlotSpec& plot, const std::vector<const PointOutcome*>& points, charts::ChartSpec& chart) {
  chart.categories = distinct(points, plot.x);
  for (const std::string& name : distinct(points, plot.series)) {
    charts::ChartSeries series{plot.series.empty() ? metric_label(plot.y.front()) : series_label(plot.series, name), {},
                               {}, false, -1};
    for (const PointOutcome* outcome : points) {
      if (outcome->point.value_of(plot.series) != name) continue;
      const auto category = std::find(chart.categories.begin(), chart.categories.end(), outcome->point.value_of(plot.x));
      series.x.push_back(static_cast<double>(category - chart.categories.begin()));
      series.y.push_back(scalar(*outcome, plot.y.front(), plot.y_unit));
    }
    chart.series.push_back(std::move(series));
  }
}

// One stack per category (a list entry, or a swept value with one point each).
void stacked_bars(const PlotSpec& plot, const std::vector<const PointOutcome*>& points, charts::ChartSpec& chart) {
  if (plot.x == "#" && points.size() != 1) {
    throw InputError(fmt::format("stacked plot '{}' over '#' needs 'where' to pick one point ({} match)", plot.name,
                                 points.size()));
  }
  if (plot.x != "#") chart.categories = distinct(points, plot.x);
  if (plot.x != "#" && chart.categories.size() != points.size()) {
    throw InputError(fmt::format("stacked plot '{}' needs one point per '{}' value; narrow it with 'where'", plot.name,
                                 plot.x));
  }
  for (const std::string& metric : plot.y) {
    charts::ChartSeries series{metric_label(metric), {}, {}, false, -1};
    if (plot.x == "#") {
      series.y = listed(*points.front(), metric, plot.y_unit);
      for (std::size_t i = 0; i < series.y.size(); ++i) series.x.push_back(static_cast<double>(i));
      if (chart.categories.size() < series.y.size()) {
        for (std::size_t i = chart.categories.size(); i < series.y.size(); ++i) chart.categories.push_back(std::to_string(i));
      }
    } else {
      for (std::size_t i = 0; i < points.size(); ++i) {
        series.x.push_back(static_cast<double>(i));
        series.y.push_back(scalar(*points[i], metric, plot.y_unit));
      }
    }
    chart.series.push_back(std::move(series));
  }
}

}  // namespace

std::string x_label(const PlotSpec& plot) {
  if (plot.x == "#") return "rank";
  std::string label = plot.x;
  std::replace(label.begin(), label.end(), '-', ' ');
  return label;
}

std::string plot_title(const PlotSpec& plot) {
  if (!plot.title.empty()) return plot.title;
  if (plot.kind == PlotKind::kGantt) return fmt::format("timeline ({})", plot.name);
  std::string names = metric_label(plot.y.front());
  for (std::size_t i = 1; i < plot.y.size(); ++i) names += ", " + metric_label(plot.y[i]);
  std::string title = fmt::format("{} by {}", names, x_label(plot));
  if (!plot.series.empty()) title += fmt::format(" and {}", plot.series);
  if (!plot.where.empty()) {
    std::vector<std::string> kept;
    for (const auto& [key, value] : plot.where) kept.push_back(series_label(key, value));
    title += fmt::format(" ({})", fmt::join(kept, ", "));
  }
  return title;
}

std::string series_label(const std::string& key, const std::string& value) { return key + " = " + value; }

std::string metric_label(const std::string& metric) {
  std::string name = metric.substr(metric.rfind('.') + 1);
  for (const auto& [suffix, replacement] : {std::pair<std::string_view, std::string_view>{"_per_s", "/s"},
                                            {"_bytes", ""}, {"_ms", ""}, {"_s", ""}}) {
    if (name.ends_with(suffix)) {
      name = name.substr(0, name.size() - suffix.size()) + std::string(replacement);
      break;
    }
  }
  std::replace(name.begin(), name.end(), '_', ' ');
  if (name == "mfu") return "MFU";
  return name;
}

void check_references(const StudyFile& study, const PlotSpec& plot, const PointOutcome& outcome) {
  for (const Reference& reference : plot.references) {
    try {
      parse_expression(reference.expression).evaluate([&](const std::string& name) {
        return reference_value(study, outcome, name);
      });
    } catch (const InputError& error) {
      std::vector<std::string> numbers;
      for (const auto& [key, value] : outcome.fields.items()) {
        if (value.is_number()) numbers.push_back(key);
      }
      throw InputError(fmt::format("plot '{}', reference '{}': {}; names are the study's options ('_' for '-') or the "
                                   "output's numbers: {}",
                                   plot.name, reference.label, error.what(), fmt::join(numbers, ", ")));
    }
  }
}

double in_unit(double value, const std::string& metric, const std::string& unit) {
  const bool bytes = is_bytes_metric(metric);
  const bool millis = metric.ends_with("_ms");
  const bool seconds = metric.ends_with("_s") && !metric.ends_with("_per_s");
  if (unit == "GiB" && bytes) return value / (1024.0 * 1024.0 * 1024.0);
  if (unit == "GB" && bytes) return value / 1e9;
  if (unit == "ms") return seconds ? value * 1e3 : value;
  if (unit == "s") return millis ? value / 1e3 : value;
  if (unit == "%") return value * 100;
  return value;
}

std::vector<const PointOutcome*> plot_points(const PlotSpec& plot, const std::vector<PointOutcome>& outcomes) {
  std::vector<const PointOutcome*> points;
  for (const PointOutcome& outcome : outcomes) {
    const bool kept = std::all_of(plot.where.begin(), plot.where.end(), [&](const auto& filter) {
      return outcome.point.value_of(filter.first) == filter.second;
    });
    if (kept) points.push_back(&outcome);
  }
  return points;
}

charts::ChartSpec chart_for(const StudyFile& study, const PlotSpec& plot, const std::vector<PointOutcome>& outcomes) {
  const std::vector<const PointOutcome*> points = plot_points(plot, outcomes);
  charts::ChartSpec chart;
  chart.title = plot_title(plot);
  chart.x_label = x_label(plot);
  chart.y_label = y_label(plot);
  chart.log_x = plot.log_x;
  chart.limit = memory_limit(plot, points);
  switch (plot.kind) {
    case PlotKind::kLine:
      chart.kind = charts::ChartKind::kLine;
      line_chart(study, plot, points, chart);
      break;
    case PlotKind::kBar:
      chart.kind = charts::ChartKind::kBar;
      if (plot.x == "#") {
        indexed_bars(plot, points, chart);
      } else {
        category_bars(plot, points, chart);
      }
      break;
    default:
      chart.kind = charts::ChartKind::kStackedBar;
      stacked_bars(plot, points, chart);
      break;
  }
  return chart;
}

}  // namespace pipeplan::study
