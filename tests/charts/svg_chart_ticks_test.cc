// The SVG chart renderer's axes: 1-2-5 steps on linear axes, powers of two
// on log axes, compact labels that never overlap, and zero only when asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "charts/chart_axes.h"
#include "charts/svg_chart.h"
#include "tests/support/svg_reader.h"

namespace pipeplan::charts {
namespace {

using namespace testing::svg_test;

TEST(SvgChart, YTicksFollowOneTwoFiveSteps) {
  ChartSpec spec;
  spec.series.push_back(ChartSeries{"rate", {1, 2, 3}, {0.0, 0.12, 0.3}});
  const std::vector<Element> elements = parsed(render_chart_svg(spec));
  EXPECT_EQ(tick_labels(elements, "tick-y"),
            (std::vector<std::string>{"0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3"}));
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {0, 1}, {0, 7.3}, {0, 13}, {-4, 17}, {0.001, 0.0042}, {100, 2500}, {0, 3.3e6}, {-2e-5, 9e-5}, {998, 1003}}) {
    ChartSpec ranged;
    ranged.y_min_zero = false;
    ranged.series.push_back(ChartSeries{"v", {0, 1}, {lo, hi}});
    expect_nice_ticks(tick_values(parsed(render_chart_svg(ranged)), "tick-y"), lo, hi);
  }
}

TEST(SvgChart, YAxisStartsAtZeroOnlyWhenAsked) {
  ChartSpec spec;
  spec.series.push_back(ChartSeries{"v", {0, 1}, {40, 50}});
  EXPECT_EQ(tick_values(parsed(render_chart_svg(spec)), "tick-y").front(), 0.0);
  spec.y_min_zero = false;
  EXPECT_GE(tick_values(parsed(render_chart_svg(spec)), "tick-y").front(), 30.0);
}

TEST(SvgChart, TickLabelsAreCompact) {
  EXPECT_EQ(tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(tick_label(0.1, 0.05), "0.1");
  EXPECT_EQ(tick_label(10, 5), "10");
  EXPECT_EQ(tick_label(500, 500), "500");
  EXPECT_EQ(tick_label(1500, 500), "1.5k");
  EXPECT_EQ(tick_label(2e6, 1e6), "2M");
  EXPECT_EQ(tick_label(-3e9, 1e9), "-3G");
  EXPECT_EQ(tick_label(1e-3, 5e-4), "1e-3");
  EXPECT_EQ(tick_label(1.5e-3, 5e-4), "1.5e-3");
  EXPECT_EQ(tick_label(0.002, 0.001), "0.002");
  EXPECT_EQ(tick_label(1e-17, 0.1), "0");
  EXPECT_EQ(tick_label(2e16, 1e16), "2e16");
}

// The estimated widths of neighbouring x labels never reach each other.
void expect_x_labels_apart(const std::vector<Element>& elements) {
  const std::vector<const Element*> labels = select(elements, "text", "class", "tick-x");
  ASSERT_GE(labels.size(), 2u);
  for (std::size_t i = 1; i < labels.size(); ++i) {
    const double half_widths = 0.3 * 11 * static_cast<double>(labels[i]->text.size() + labels[i - 1]->text.size());
    EXPECT_GT(number(*labels[i], "x") - number(*labels[i - 1], "x"), half_widths)
        << labels[i - 1]->text << " / " << labels[i]->text;
  }
}

TEST(SvgChart, XTickLabelsNeverOverlap) {
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {0, 10}, {0, 123456789}, {1.000001, 1.000002}, {-0.00037, 0.0009}, {0, 1e15}, {3e14, 9e14}}) {
    ChartSpec spec;
    spec.series.push_back(ChartSeries{"v", {lo, hi}, {1, 2}});
    const std::vector<Element> elements = parsed(render_chart_svg(spec));
    expect_x_labels_apart(elements);
    const std::vector<double> ticks = tick_values(elements, "tick-x");
    EXPECT_GE(ticks.size(), 3u);
    EXPECT_LE(ticks.size(), 8u);
  }
}

TEST(SvgChart, LogXTicksArePowersOfTwo) {
  ChartSpec spec;
  spec.log_x = true;
  spec.series.push_back(ChartSeries{"makespan", {1, 2, 4, 8, 16, 32, 64}, {7, 6, 5, 4, 3, 2, 1}});
  std::vector<Element> elements = parsed(render_chart_svg(spec));
  EXPECT_EQ(tick_labels(elements, "tick-x"), (std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64"}));
  // Powers of two sit evenly along the axis.
  const std::vector<const Element*> markers = select(elements, "circle", "class", "series-0");
  ASSERT_EQ(markers.size(), 7u);
  const double pitch = number(*markers[1], "cx") - number(*markers[0], "cx");
  EXPECT_GT(pitch, 10);
  for (std::size_t i = 2; i < markers.size(); ++i) {
    EXPECT_NEAR(number(*markers[i], "cx") - number(*markers[i - 1], "cx"), pitch, 0.02);
  }
  // Wide and fractional ranges: fewer ticks, still powers of two.
  for (const std::vector<double>& xs : {std::vector<double>{1, 1 << 20}, {0.03, 3}, {5, 5}, {1e-9, 1e9}}) {
    ChartSpec wide;
    wide.log_x = true;
    wide.series.push_back(ChartSeries{"v", xs, std::vector<double>(xs.size(), 1.0)});
    elements = parsed(render_chart_svg(wide));
    const std::vector<double> ticks = tick_values(elements, "tick-x");
    ASSERT_GE(ticks.size(), 2u);
    EXPECT_LE(ticks.size(), 8u);
    for (const double tick : ticks) EXPECT_EQ(std::exp2(std::round(std::log2(tick))), tick) << tick;
    EXPECT_LE(ticks.front(), xs.front());
    EXPECT_GE(ticks.back(), xs.back());
    expect_x_labels_apart(elements);
  }
}

TEST(SvgChart, LogXSkipsNonPositiveX) {
  ChartSpec spec;
  spec.log_x = true;
  spec.series.push_back(ChartSeries{"v", {0, 1, 2, -4, 8}, {1, 2, 3, 4, 5}});
  const std::string svg = render_chart_svg(spec);
  const std::vector<Element> elements = parsed(svg);
  EXPECT_EQ(select(elements, "polyline", "data-series", "v").size(), 2u);
  EXPECT_EQ(select(elements, "circle", "class", "series-0").size(), 3u);
  expect_finite(svg, elements);
}

}  // namespace
}  // namespace pipeplan::charts
