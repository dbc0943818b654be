// The SVG chart renderer: well-formed documents for every chart kind, one
// drawn element per segment or bar, legends (ticks: svg_chart_ticks_test.cc),
// escaping, and finite coordinates whatever the data.
#include "charts/svg_chart.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "charts/chart_axes.h"
#include "tests/support/svg_reader.h"

namespace pipeplan::charts {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using namespace testing::svg_test;

ChartSeries series(std::string name, std::vector<double> x, std::vector<double> y, bool dashed = false,
                           int colour = -1) {
  return ChartSeries{std::move(name), std::move(x), std::move(y), dashed, colour};
}

ChartSpec spec_of(ChartKind kind) {
  ChartSpec spec;
  spec.kind = kind;
  return spec;
}

ChartSpec line_spec() {
  ChartSpec spec;
  spec.title = "Bubble rate against micro-batches";
  spec.x_label = "micro-batches";
  spec.y_label = "bubble rate";
  spec.series.push_back(series("1F1B simulated", {1, 2, 4, 8, 16}, {0.75, 0.6, 0.43, 0.27, 0.16}));
  spec.series.push_back(series("1F1B closed form", {1, 2, 4, 8, 16}, {0.75, 0.6, 0.43, 0.27, 0.16}, true, 0));
  return spec;
}

ChartSpec bar_spec(ChartKind kind) {
  ChartSpec spec;
  spec.kind = kind;
  spec.title = "Peak memory per stage";
  spec.x_label = "stage";
  spec.y_label = "peak memory (GiB)";
  spec.categories = {"stage 0", "stage 1", "stage 2"};
  spec.series.push_back(series("weights", {0, 1, 2}, {10, 12, 8}));
  spec.series.push_back(series("activations", {0, 1, 2}, {20, kNaN, 5}));
  spec.series.push_back(series("optimizer", {0, 1, 2}, {6, 6, 6}));
  return spec;
}

// ---- The checker itself.

TEST(SvgChartXmlChecker, AcceptsWellFormedAndRejectsBrokenXml) {
  EXPECT_TRUE(parse_xml("<svg a=\"1\"><g><rect x='1'/></g><text>a &amp; b</text></svg>").has_value());
  EXPECT_FALSE(parse_xml("<svg><g></svg>").has_value());
  EXPECT_FALSE(parse_xml("<svg><g></g>").has_value());
  EXPECT_FALSE(parse_xml("<svg><text>a & b</text></svg>").has_value());
  EXPECT_FALSE(parse_xml("<svg><text>a < b</text></svg>").has_value());
  EXPECT_FALSE(parse_xml("<svg/><svg/>").has_value());
  EXPECT_FALSE(parse_xml("<svg x=\"1/>").has_value());
  EXPECT_FALSE(parse_xml("<svg x=1/>").has_value());
  EXPECT_FALSE(parse_xml("<svg x=\"a\"b\"/>").has_value());
  EXPECT_FALSE(parse_xml("<svg x=\"1\" x=\"2\"/>").has_value());
  const auto elements = parse_xml("<svg><text class=\"t\">a &lt; b<title>x</title></text></svg>");
  ASSERT_TRUE(elements.has_value());
  ASSERT_EQ(elements->size(), 3u);
  EXPECT_EQ(unescape((*elements)[1].text), "a < b");
  EXPECT_EQ(tooltip(*elements, (*elements)[1]), "x");
}

// ---- Documents.

TEST(SvgChart, EveryKindIsOneWellFormedSvgDocument) {
  std::vector<ChartSpec> specs{line_spec(), bar_spec(ChartKind::kBar),
                                       bar_spec(ChartKind::kStackedBar)};
  for (ChartKind kind : {ChartKind::kLine, ChartKind::kBar, ChartKind::kStackedBar})
    specs.push_back(spec_of(kind));
  for (const ChartSpec& spec : specs) {
    const std::string svg = render_chart_svg(spec);
    const std::vector<Element> elements = parsed(svg);
    ASSERT_FALSE(elements.empty());
    const Element& root = elements.front();
    EXPECT_EQ(root.name, "svg");
    EXPECT_EQ(attribute(root, "xmlns"), "http://www.w3.org/2000/svg");
    EXPECT_EQ(attribute(root, "viewBox"), "0 0 760 440");
    EXPECT_EQ(svg.rfind("<svg", 0), 0u) << "no prolog, so it can sit inline in HTML";
    EXPECT_EQ(select(elements, "rect", "fill", "white").size(), 1u);
    EXPECT_EQ(select(elements, "path", "class", "axis").size(), 1u);
    EXPECT_GE(select(elements, "line", "class", "grid-y").size(), 4u);
    expect_finite(svg, elements);
  }
}

TEST(SvgChart, ShowsTheTitleAndAxisLabels) {
  const std::vector<Element> elements = parsed(render_chart_svg(line_spec()));
  ASSERT_EQ(select(elements, "text", "class", "title").size(), 1u);
  EXPECT_EQ(select(elements, "text", "class", "title")[0]->text, "Bubble rate against micro-batches");
  ASSERT_EQ(select(elements, "text", "class", "x-label").size(), 1u);
  EXPECT_EQ(select(elements, "text", "class", "x-label")[0]->text, "micro-batches");
  const std::vector<const Element*> y_label = select(elements, "text", "class", "y-label");
  ASSERT_EQ(y_label.size(), 1u);
  EXPECT_EQ(y_label[0]->text, "bubble rate");
  EXPECT_EQ(attribute(*y_label[0], "transform").rfind("rotate(-90 ", 0), 0u);
}

TEST(SvgChart, EmptySpecStillHasAxesAndSaysNoData) {
  for (ChartKind kind : {ChartKind::kLine, ChartKind::kBar, ChartKind::kStackedBar}) {
    const std::string svg = render_chart_svg(spec_of(kind));
    const std::vector<Element> elements = parsed(svg);
    ASSERT_EQ(select(elements, "text", "class", "no-data").size(), 1u);
    EXPECT_EQ(select(elements, "text", "class", "no-data")[0]->text, "no data");
    EXPECT_GE(tick_labels(elements, "tick-y").size(), 2u);
    EXPECT_TRUE(select(elements, "g", "class", "legend-entry").empty());
  }
  EXPECT_EQ(render_chart_svg(line_spec()).find("no data"), std::string::npos);
}

TEST(SvgChart, IsDeterministic) {
  EXPECT_EQ(render_chart_svg(line_spec()), render_chart_svg(line_spec()));
  EXPECT_EQ(render_chart_svg(bar_spec(ChartKind::kStackedBar)),
            render_chart_svg(bar_spec(ChartKind::kStackedBar)));
}

// ---- Line charts.

// "#1f77b4" with each channel at 55 %.
std::string darker(const std::string& colour) {
  const unsigned value = std::stoul(colour.substr(1), nullptr, 16);
  auto channel = [&](int shift) { return static_cast<unsigned>(((value >> shift) & 0xffu) * 0.55); };
  return fmt::format("#{:02x}{:02x}{:02x}", channel(16), channel(8), channel(0));
}

TEST(SvgChart, LineDrawsOnePolylinePerContiguousSegmentAndAMarkerPerPoint) {
  ChartSpec spec;
  spec.series.push_back(series("measured", {1, 2, 3, 4, 5, 6, 7}, {1, 2, kNaN, 4, 5, kNaN, 7}));
  spec.series.push_back(series("other", {1, 2, 3}, {3, 2, 1}));
  const std::string svg = render_chart_svg(spec);
  const std::vector<Element> elements = parsed(svg);
  const std::vector<const Element*> lines = select(elements, "polyline", "data-series", "measured");
  ASSERT_EQ(lines.size(), 3u);
  for (const Element* line : lines) EXPECT_EQ(attribute(*line, "class"), "series-0");
  // The series under another is wider, so a line drawn over it with the
  // same values leaves it visible; the top one is 2 px.
  EXPECT_EQ(std::stod(attribute(*lines[0], "stroke-width")), 3.5);
  EXPECT_EQ(select(elements, "polyline", "data-series", "other").size(), 1u);
  EXPECT_EQ(std::stod(attribute(*select(elements, "polyline", "data-series", "other")[0], "stroke-width")), 2.0);
  const std::vector<const Element*> markers = select(elements, "circle", "class", "series-0");
  ASSERT_EQ(markers.size(), 5u);
  EXPECT_EQ(tooltip(elements, *markers[2]), "measured: 4, 4");
  EXPECT_EQ(select(elements, "circle", "class", "series-1").size(), 3u);
  // Its markers are rings larger than the top series' dots.
  EXPECT_EQ(attribute(*markers[0], "fill"), "white");
  EXPECT_GT(std::stod(attribute(*markers[0], "r")),
            std::stod(attribute(*select(elements, "circle", "class", "series-1")[0], "r")));
  // The lone last point still shows: its polyline repeats it.
  std::string lone = attribute(*lines[2], "points");
  EXPECT_EQ(lone.substr(0, lone.find(' ')), lone.substr(lone.find(' ') + 1));
  expect_finite(svg, elements);
}

TEST(SvgChart, DashedSeriesCarryADasharrayAndNoMarkers) {
  const std::vector<Element> elements = parsed(render_chart_svg(line_spec()));
  const std::vector<const Element*> solid = select(elements, "polyline", "data-series", "1F1B simulated");
  const std::vector<const Element*> dashed = select(elements, "polyline", "data-series", "1F1B closed form");
  ASSERT_EQ(solid.size(), 1u);
  ASSERT_EQ(dashed.size(), 1u);
  EXPECT_EQ(attribute(*solid[0], "stroke-dasharray"), "");
  EXPECT_NE(attribute(*dashed[0], "stroke-dasharray"), "");
  EXPECT_EQ(select(elements, "circle", "class", "series-0").size(), 5u);
  EXPECT_TRUE(select(elements, "circle", "class", "series-1").empty());
  // The reference picked palette entry 0, like the series it follows, in a
  // darker shade so that it shows where it lies on that series.
  EXPECT_EQ(attribute(*dashed[0], "stroke"), darker(attribute(*solid[0], "stroke")));
}

TEST(SvgChart, LegendListsEverySeriesWithItsSwatch) {
  ChartSpec spec = line_spec();
  spec.series.push_back(series("never ran", {}, {}));
  const std::vector<Element> elements = parsed(render_chart_svg(spec));
  const std::vector<const Element*> entries = select(elements, "g", "class", "legend-entry");
  ASSERT_EQ(entries.size(), spec.series.size());
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    EXPECT_EQ(unescape(attribute(*entries[i], "data-legend")), spec.series[i].name);
    const int index = static_cast<int>(entries[i] - elements.data());
    std::string text;
    std::size_t dashed_swatches = 0;
    for (const Element& child : elements) {
      if (child.parent != index) continue;
      if (child.name == "text") text = unescape(child.text);
      if (child.name == "line" && !attribute(child, "stroke-dasharray").empty()) ++dashed_swatches;
    }
    EXPECT_EQ(text, spec.series[i].name);
    EXPECT_EQ(dashed_swatches, spec.series[i].dashed ? 1u : 0u) << spec.series[i].name;
  }
  EXPECT_TRUE(select(elements, "polyline", "data-series", "never ran").empty());
}

TEST(SvgChart, ColoursComeFromAPaletteByPositionOrByIndex) {
  ChartSpec spec;
  for (int i = 0; i < 10; ++i) spec.series.push_back(series(fmt::format("run {}", i), {0, 1}, {1.0 * i, 2.0 * i}));
  spec.series.push_back(series("reference", {0, 1}, {1, 2}, true, 3));
  const std::vector<Element> elements = parsed(render_chart_svg(spec));
  std::set<std::string> colours;
  for (int i = 0; i < 10; ++i) {
    const std::vector<const Element*> line = select(elements, "polyline", "class", fmt::format("series-{}", i));
    ASSERT_EQ(line.size(), 1u);
    colours.insert(attribute(*line[0], "stroke"));
  }
  EXPECT_EQ(colours.size(), 10u);
  EXPECT_EQ(attribute(*select(elements, "polyline", "class", "series-10")[0], "stroke"),
            darker(attribute(*select(elements, "polyline", "class", "series-3")[0], "stroke")));
}

// ---- Escaping and degenerate data.

TEST(SvgChart, EscapesAllText) {
  ChartSpec spec = bar_spec(ChartKind::kBar);
  spec.title = "R&D <draft>";
  spec.x_label = "a & b";
  spec.y_label = "\"c\" < d";
  spec.categories[0] = "x<y & z";
  spec.series[0].name = "say \"hi\" & <bye>";
  const std::string svg = render_chart_svg(spec);
  const std::vector<Element> elements = parsed(svg);
  for (const char* raw : {"R&D", "<draft>", "a & b", "\"c\" < d", "x<y", "\"hi\"", "<bye>"}) {
    EXPECT_EQ(svg.find(raw), std::string::npos) << raw;
  }
  EXPECT_NE(svg.find(">R&amp;D &lt;draft&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">x&lt;y &amp; z</text>"), std::string::npos);
  const std::string escaped_name = "say &quot;hi&quot; &amp; &lt;bye&gt;";
  EXPECT_EQ(select(elements, "rect", "data-series", escaped_name).size(), 3u);
  EXPECT_EQ(select(elements, "g", "data-legend", escaped_name).size(), 1u);
  EXPECT_EQ(tooltip(elements, *select(elements, "rect", "data-series", escaped_name)[0]),
            "say \"hi\" & <bye>: x<y & z, 10");
}

TEST(SvgChart, NanLeavesGapsAndNeverReachesTheOutput) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ChartSpec> specs;
  for (ChartKind kind : {ChartKind::kLine, ChartKind::kBar, ChartKind::kStackedBar}) {
    ChartSpec spec = spec_of(kind);
    spec.categories = {"a", "b", "c", "d"};
    spec.series.push_back(series("gappy", {0, 1, 2, 3}, {kNaN, 2, inf, 4}));
    spec.series.push_back(series("all missing", {0, 1, 2, 3}, {kNaN, kNaN, kNaN, kNaN}));
    spec.series.push_back(series("missing x", {kNaN, 1, -inf, 3}, {1, 1, 1, 1}));
    specs.push_back(spec);
  }
  for (const ChartSpec& spec : specs) {
    const std::string svg = render_chart_svg(spec);
    const std::vector<Element> elements = parsed(svg);
    expect_finite(svg, elements);
    const std::string drawn = spec.kind == ChartKind::kLine ? "polyline" : "rect";
    EXPECT_EQ(select(elements, drawn, "data-series", "gappy").size(), 2u);
    EXPECT_TRUE(select(elements, drawn, "data-series", "all missing").empty());
    EXPECT_EQ(select(elements, drawn, "data-series", "missing x").size(), 2u);
    EXPECT_EQ(select(elements, "g", "class", "legend-entry").size(), 3u);
  }
}

TEST(SvgChart, DegenerateRangesStayFinite) {
  std::vector<ChartSpec> specs;
  for (const std::vector<double>& ys : {std::vector<double>{3, 3, 3}, {0, 0, 0}, {-2, -2, -2}, {kNaN, kNaN, kNaN}}) {
    for (const bool min_zero : {true, false}) {
      for (ChartKind kind :
           {ChartKind::kLine, ChartKind::kBar, ChartKind::kStackedBar}) {
        ChartSpec spec = spec_of(kind);
        spec.y_min_zero = min_zero;
        spec.series.push_back(series("flat", {2, 2, 2}, ys));
        spec.series.push_back(series("single", {5}, {ys[0]}));
        specs.push_back(spec);
      }
    }
  }
  ChartSpec log_single;
  log_single.log_x = true;
  log_single.series.push_back(series("one", {8}, {1}));
  specs.push_back(log_single);
  ChartSpec huge;
  huge.series.push_back(series("huge", {-1e300, 1e300}, {-1e300, 1e300}));
  specs.push_back(huge);
  for (const ChartSpec& spec : specs) {
    const std::string svg = render_chart_svg(spec);
    const std::vector<Element> elements = parsed(svg);
    expect_finite(svg, elements);
    EXPECT_GE(tick_labels(elements, "tick-y").size(), 2u);
    const bool all_nan = std::isnan(spec.series[0].y[0]);
    EXPECT_EQ(select(elements, "text", "class", "no-data").size(), all_nan ? 1u : 0u);
  }
}

// ---- Bar charts.

TEST(SvgChart, BarsDrawOneRectPerValueGroupedByCategory) {
  const ChartSpec spec = bar_spec(ChartKind::kBar);
  const std::vector<Element> elements = parsed(render_chart_svg(spec));
  EXPECT_EQ(select(elements, "rect", "data-series", "weights").size(), 3u);
  EXPECT_EQ(select(elements, "rect", "data-series", "activations").size(), 2u);
  EXPECT_EQ(select(elements, "rect", "class", "series-2").size(), 3u);
  EXPECT_EQ(tick_labels(elements, "category"), spec.categories);
  // Within each group series sit left to right in order, and groups do not mix.
  const std::vector<const Element*> weights = select(elements, "rect", "class", "series-0");
  const std::vector<const Element*> optimizer = select(elements, "rect", "class", "series-2");
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_LT(number(*weights[c], "x"), number(*optimizer[c], "x"));
    if (c > 0) {
      EXPECT_LT(number(*optimizer[c - 1], "x"), number(*weights[c], "x"));
    }
  }
  EXPECT_EQ(tooltip(elements, *weights[1]), "weights: stage 1, 12");
  // Taller values draw taller bars from the same baseline.
  EXPECT_GT(number(*weights[1], "height"), number(*weights[0], "height"));
  EXPECT_NEAR(number(*weights[1], "y") + number(*weights[1], "height"),
              number(*weights[0], "y") + number(*weights[0], "height"), 0.01);
}

TEST(SvgChart, LongCategoryLabelsRotate) {
  ChartSpec spec = bar_spec(ChartKind::kBar);
  std::vector<Element> elements = parsed(render_chart_svg(spec));
  for (const Element* label : select(elements, "text", "class", "category")) {
    EXPECT_EQ(attribute(*label, "transform"), "");
  }
  spec.categories.clear();
  for (int i = 0; i < 12; ++i) spec.categories.push_back(fmt::format("interleaved 1F1B, v={}", i));
  spec.series.push_back(series("wide", {11}, {1}));
  const std::string svg = render_chart_svg(spec);
  elements = parsed(svg);
  const std::vector<const Element*> labels = select(elements, "text", "class", "category");
  ASSERT_FALSE(labels.empty());
  for (const Element* label : labels) {
    EXPECT_EQ(attribute(*label, "transform").rfind("rotate(-30 ", 0), 0u);
    EXPECT_GE(number(*label, "x") - 0.87 * text_width(label->text, kTickFont), 0) << "stays on the canvas";
  }
  expect_finite(svg, elements);
}

// The px of a y value, read off the grid lines and their labels.
double grid_y(const std::vector<Element>& elements, double value) {
  const std::vector<const Element*> grid = select(elements, "line", "class", "grid-y");
  const std::vector<double> ticks = tick_values(elements, "tick-y");
  const double y0 = number(*grid.front(), "y1");
  const double y1 = number(*grid.back(), "y1");
  return y0 + (value - ticks.front()) / (ticks.back() - ticks.front()) * (y1 - y0);
}

TEST(SvgChart, StackedBarTopsEqualTheSumOfTheirSeries) {
  ChartSpec spec = bar_spec(ChartKind::kStackedBar);
  spec.series.push_back(series("refund", {2}, {-3}));
  const std::vector<Element> elements = parsed(render_chart_svg(spec));
  EXPECT_EQ(select(elements, "rect", "data-series", "activations").size(), 2u);
  const std::vector<double> ticks = tick_values(elements, "tick-y");
  expect_nice_ticks(ticks, -3, 36);                         // the largest stack is 10 + 20 + 6
  std::map<std::string, std::vector<const Element*>> by_x;  // one stack per category
  for (const Element& element : elements) {
    if (element.name == "rect" && !attribute(element, "data-series").empty()) {
      by_x[attribute(element, "x")].push_back(&element);
    }
  }
  ASSERT_EQ(by_x.size(), 3u);
  const std::map<std::string, double> upward{{"stage 0", 36}, {"stage 1", 18}, {"stage 2", 19}};
  for (const auto& [x, rects] : by_x) {
    const std::string category = tooltip(elements, *rects[0]).substr(tooltip(elements, *rects[0]).find(": ") + 2, 7);
    double height = 0;
    double top = grid_y(elements, 0);
    for (const Element* rect : rects) {
      if (attribute(*rect, "data-series") == "refund") continue;
      height += number(*rect, "height");
      EXPECT_NEAR(number(*rect, "y") + number(*rect, "height"), top, 0.02) << "stacked bottom-up without gaps";
      top = number(*rect, "y");
    }
    EXPECT_NEAR(height, grid_y(elements, 0) - grid_y(elements, upward.at(category)), 1.0) << category;
  }
  const std::vector<const Element*> refund = select(elements, "rect", "data-series", "refund");
  ASSERT_EQ(refund.size(), 1u);
  EXPECT_NEAR(number(*refund[0], "y"), grid_y(elements, 0), 0.02) << "negative values hang below 0";
  EXPECT_NEAR(number(*refund[0], "height"), grid_y(elements, -3) - grid_y(elements, 0), 1.0);
}

}  // namespace
}  // namespace pipeplan::charts
