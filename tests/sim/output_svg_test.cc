// The SVG Gantt chart: well-formed XML, one bar per compute action with its
// kind as class, a label per rank, a legend and a 1-2-5 axis.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/output/svg_gantt.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

SimulationReport run(const char* name, int ranks, int microbatches, bool overlap = true) {
  SimulationOptions options;
  options.overlap_comm = overlap;
  options.record_timeline = true;
  options.compute_critical_path = false;
  return testing::simulate_uniform(name, ranks, microbatches, 0, {1e-3, 1e-3, 1e-3, 1e-4, 1 << 20, 0, 0, 1 << 20},
                                   options);
}

std::size_t count(std::string_view text, std::string_view needle) {
  std::size_t found = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++found;
  return found;
}

// A small XML checker: tags balance, one root, attribute values quoted,
// '<' never in text or values, '&' only as a predefined entity.
bool valid_entity(std::string_view xml, std::size_t at) {
  for (std::string_view entity : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
    if (xml.substr(at, entity.size()) == entity) return true;
  }
  return false;
}

// Reads the tag at xml[at] == '<'; returns the index after its '>' or npos.
std::size_t read_tag(std::string_view xml, std::size_t at, std::string& name, bool& closing, bool& empty) {
  closing = xml.substr(at, 2) == "</";
  std::size_t i = at + (closing ? 2 : 1);
  const std::size_t name_start = i;
  while (i < xml.size() && (std::isalnum(static_cast<unsigned char>(xml[i])) || xml[i] == '-' || xml[i] == ':')) ++i;
  name = std::string(xml.substr(name_start, i - name_start));
  if (name.empty()) return std::string_view::npos;
  char quote = 0;
  for (; i < xml.size(); ++i) {
    const char c = xml[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      if (c == '<' || (c == '&' && !valid_entity(xml, i))) return std::string_view::npos;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '<') {
      return std::string_view::npos;
    } else if (c == '>') {
      empty = xml[i - 1] == '/';
      return i + 1;
    }
  }
  return std::string_view::npos;
}

bool well_formed(std::string_view xml) {
  std::vector<std::string> open;
  int roots = 0;
  for (std::size_t i = 0; i < xml.size();) {
    if (xml[i] == '&' && !valid_entity(xml, i)) return false;
    if (xml[i] != '<') { ++i; continue; }
    if (xml.substr(i, 2) == "<?") {
      const std::size_t end = xml.find("?>", i);
      if (end == std::string_view::npos) return false;
      i = end + 2;
      continue;
    }
    std::string name;
    bool closing = false;
    bool empty = false;
    const std::size_t next = read_tag(xml, i, name, closing, empty);
    if (next == std::string_view::npos) return false;
    if (closing) {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else {
      if (open.empty()) ++roots;
      if (!empty) open.push_back(name);
    }
    i = next;
  }
  return open.empty() && roots == 1;
}

TEST(SvgChecker, RejectsBrokenXml) {
  EXPECT_TRUE(well_formed("<svg><g><rect x=\"1\"/></g><text>a &amp; b</text></svg>"));
  EXPECT_FALSE(well_formed("<svg><g></svg>"));
  EXPECT_FALSE(well_formed("<svg><text>a & b</text></svg>"));
  EXPECT_FALSE(well_formed("<svg><text>a < b</text></svg>"));
  EXPECT_FALSE(well_formed("<svg/><svg/>"));
}

TEST(SvgGantt, IsOneWellFormedSvgDocument) {
  for (const char* name : {"1F1B", "ZBH1", "Interleaved1F1B", "DualPipeV"}) {
    const std::string svg = svg_gantt(run(name, 4, 8));
    EXPECT_TRUE(well_formed(svg)) << name;
    EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos) << name;
    EXPECT_NE(svg.find("viewBox=\"0 0 "), std::string::npos) << name;
    EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7) << name;
  }
}

TEST(SvgGantt, DrawsOneBarPerComputeActionByKind) {
  for (const char* name : {"1F1B", "ZBH1"}) {
    const SimulationReport report = run(name, 4, 8);
    std::map<std::string, std::size_t> expected;
    for (const ComputeRecord& record : report.timeline->computes) {
      ++expected[std::string(kind_name(record.action.kind))];
    }
    const std::string svg = svg_gantt(report);
    for (std::string kind : {"F", "B", "I", "W"}) {
      EXPECT_EQ(count(svg, "<rect class=\"" + kind + "\""), expected[kind]) << name << " " << kind;
    }
    EXPECT_EQ(count(svg, "<title>"), report.compute_actions) << name;
  }
}

TEST(SvgGantt, LabelsEachRankAndShowsTheLegend) {
  const SimulationReport report = run("ZBH1", 4, 8);
  const std::string svg = svg_gantt(report);
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(count(svg, ">rank " + std::to_string(rank) + "<"), 1u) << rank;
  for (const char* key : {">F forward<", ">B backward<", ">I backward input<", ">W backward weight<"}) {
    EXPECT_EQ(count(svg, key), 1u) << key;
  }
  EXPECT_NE(svg.find("ZBH1 | p=4 m=8 v=1 | makespan"), std::string::npos);
}

// Tick labels step by 1, 2 or 5 times a power of ten, 5 to 10 of them.
void expect_nice_ticks(const std::string& svg, double makespan_ms) {
  std::vector<double> ticks;
  for (auto at = svg.find("class=\"tick\""); at != std::string::npos; at = svg.find("class=\"tick\"", at + 1)) {
    const std::size_t open = svg.find('>', at) + 1;
    ticks.push_back(std::stod(svg.substr(open, svg.find('<', open) - open)));
  }
  ASSERT_GE(ticks.size(), 5u) << makespan_ms;
  ASSERT_LE(ticks.size(), 10u) << makespan_ms;
  const double step = ticks[1] - ticks[0];
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6)
      << step;
  EXPECT_EQ(ticks.front(), 0.0);
  EXPECT_LE(ticks.back(), makespan_ms + 1e-9);
}

TEST(SvgGantt, LabelsTheTimeAxisInNiceSteps) {
  for (int microbatches : {1, 3, 8, 40, 150}) {
    const SimulationReport report = run("1F1B", 4, microbatches);
    expect_nice_ticks(svg_gantt(report), report.makespan_s * 1e3);
  }
}

TEST(SvgGantt, NumbersWideBarsWithTheirMicroBatch) {
  // 2 ranks x 4 micro-batches last about 14 ms: every bar is ~80 px wide.
  const SimulationReport report = run("1F1B", 2, 4);
  const std::string svg = svg_gantt(report);
  EXPECT_EQ(count(svg, "<text class=\"mb\""), report.compute_actions);
  EXPECT_NE(svg.find("<text class=\"mb\" x=\""), std::string::npos);
}

TEST(SvgGantt, DrawsBlockingWaitsAsGreyBars) {
  const SimulationReport report = run("1F1B", 4, 8, false);
  ASSERT_FALSE(report.timeline->comm_waits.empty());
  const std::string svg = svg_gantt(report);
  EXPECT_EQ(count(svg, "<rect class=\"wait\""), report.timeline->comm_waits.size());
  EXPECT_NE(svg.find(">comm wait<"), std::string::npos);
  EXPECT_TRUE(well_formed(svg));
}

TEST(SvgGantt, EscapesTheScheduleName) {
  SimulationReport report = run("1F1B", 2, 2);
  report.schedule = "a<b & \"c\"";
  const std::string svg = svg_gantt(report);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
}

TEST(SvgGantt, DropsLabelsForHugeSchedules) {
  const SimulationReport report = run("1F1B", 8, 1300);
  ASSERT_GT(report.compute_actions, kSvgMaxLabelledActions);
  const std::string svg = svg_gantt(report);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(count(svg, "<text class=\"mb\""), 0u);
  EXPECT_EQ(count(svg, "<rect class=\"F\""), report.compute_actions / 2);
}

TEST(SvgGantt, RejectsAReportWithoutTimeline) {
  SimulationReport report = run("1F1B", 2, 2);
  report.timeline.reset();
  EXPECT_THROW(svg_gantt(report), InputError);
}

}  // namespace
}  // namespace pipeplan::sim
