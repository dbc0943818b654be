#include "study/plot_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/error.h"
#include "study/expression.h"
#include "study/point_command.h"

namespace pipeplan::study {
namespace {

constexpr double kGap = std::numeric_limits<double>::quiet_NaN();

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
  if (!outcome.error.empty() || !outcome.metrics.contains(metric)) return values;
  const auto& list = outcome.metrics.at(metric);
  if (!list.is_array()) throw InputError(fmt::format("x '#' needs a list metric ('...*...'), not '{}'", metric));
  for (const auto& item : list) values.push_back(item.is_number() ? in_unit(item.get<double>(), metric, unit) : kGap);
  return values;
}

std::string y_label(const PlotSpec& plot) {
  const std::string names = plot.kind == PlotKind::kStackedBar ? "memory" : plot.y.front();
  return plot.y_unit.empty() ? names : fmt::format("{} ({})", names, plot.y_unit);
}

void add_references(const StudyFile& study, const PlotSpec& plot, const std::vector<const PointOutcome*>& points,
                    ChartSpec& chart, const std::vector<std::string>& series_names) {
  for (const Reference& reference : plot.references) {
    const Expression expression = parse_expression(reference.expression);
    ChartSeries curve{reference.label, {}, {}, true, -1};
    for (const PointOutcome* outcome : points) {
      if (!reference.series.empty() && outcome->point.value_of(plot.series) != reference.series) continue;
      const double y = expression.evaluate([&](const std::string& name) -> std::optional<double> {
        std::string key = name;
        std::replace(key.begin(), key.end(), '_', '-');
        const std::string value = option_value(study, outcome->point, key);
        if (value.empty()) return std::nullopt;
        return leading_number(value);
      });
      curve.x.push_back(leading_number(outcome->point.value_of(plot.x)));
      curve.y.push_back(plot.y_unit == "%" ? y * 100 : y);
    }
    const auto owner = std::find(series_names.begin(), series_names.end(), reference.series);
    if (owner != series_names.end()) curve.colour = static_cast<int>(owner - series_names.begin());
    chart.series.push_back(std::move(curve));
  }
}

void line_chart(const StudyFile& study, const PlotSpec& plot, const std::vector<const PointOutcome*>& points,
                ChartSpec& chart) {
  const std::vector<std::string> names = distinct(points, plot.series);
  for (const std::string& name : names) {
    for (const std::string& metric : plot.y) {
      ChartSeries series{plot.series.empty() ? metric : name, {}, {}, false, -1};
      if (!plot.series.empty() && plot.y.size() > 1) series.name = fmt::format("{} {}", name, metric);
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
void indexed_bars(const PlotSpec& plot, const std::vector<const PointOutcome*>& points, ChartSpec& chart) {
  std::size_t width = 0;
  for (const PointOutcome* outcome : points) {
    const std::string name = plot.series.empty() ? fmt::format("point {}", outcome->point.index)
                                                 : outcome->point.value_of(plot.series);
    ChartSeries series{name, {}, listed(*outcome, plot.y.front(), plot.y_unit), false, -1};
    for (std::size_t i = 0; i < series.y.size(); ++i) series.x.push_back(static_cast<double>(i));
    width = std::max(width, series.y.size());
    chart.series.push_back(std::move(series));
  }
  for (std::size_t i = 0; i < width; ++i) chart.categories.push_back(std::to_string(i));
}

void category_bars(const PlotSpec& plot, const std::vector<const PointOutcome*>& points, ChartSpec& chart) {
  chart.categories = distinct(points, plot.x);
  for (const std::string& name : distinct(points, plot.series)) {
    ChartSeries series{plot.series.empty() ? plot.y.front() : name, {}, {}, false, -1};
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
void stacked_bars(const PlotSpec& plot, const std::vector<const PointOutcome*>& points, ChartSpec& chart) {
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
    ChartSeries series{metric.substr(metric.rfind('.') + 1), {}, {}, false, -1};
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

double in_unit(double value, const std::string& metric, const std::string& unit) {
  // Byte counts: *_bytes, and the parts of a memory breakdown.
  const bool bytes = metric.find("bytes") != std::string::npos || metric.find("memory_breakdown") != std::string::npos;
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

ChartSpec chart_for(const StudyFile& study, const PlotSpec& plot, const std::vector<PointOutcome>& outcomes) {
  const std::vector<const PointOutcome*> points = plot_points(plot, outcomes);
  ChartSpec chart;
  chart.title = plot.title;
  chart.x_label = plot.x == "#" ? "rank" : plot.x;
  chart.y_label = y_label(plot);
  chart.log_x = plot.log_x;
  switch (plot.kind) {
    case PlotKind::kLine:
      chart.kind = ChartKind::kLine;
      line_chart(study, plot, points, chart);
      break;
    case PlotKind::kBar:
      chart.kind = ChartKind::kBar;
      if (plot.x == "#") {
        indexed_bars(plot, points, chart);
      } else {
        category_bars(plot, points, chart);
      }
      break;
    default:
      chart.kind = ChartKind::kStackedBar;
      stacked_bars(plot, points, chart);
      break;
  }
  return chart;
}

}  // namespace pipeplan::study
