// The terminal Gantt chart: one equal-length line per rank, labels at the
// start of each action's span, a legend and a scale.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "sim/generators/registry.h"
#include "sim/output/ascii_gantt.h"
#include "tests/support/sim_test_support.h"
#include "tests/support/text_lines.h"

namespace pipeplan::sim {
namespace {

SimulationReport run(const char* name, int ranks, int microbatches, bool timeline = true) {
  SimulationOptions options;
  options.record_timeline = timeline;
  options.compute_critical_path = false;
  return testing::simulate_uniform(name, ranks, microbatches, 0, {1e-3, 1e-3, 0, 1e-4, 1 << 20, 0, 0, 1 << 20},
                                   options);
}

using pipeplan::testing::lines_of;

// The part of a rank line between the bars.
std::string cells_of(const std::string& line) {
  const std::size_t open = line.find('|');
  return line.substr(open + 1, line.rfind('|') - open - 1);
}

TEST(AsciiGantt, HasOneEqualLinePerRankThenLegendAndScale) {
  const SimulationReport report = run("1F1B", 12, 16);
  const std::vector<std::string> lines = lines_of(ascii_gantt(report, 80));
  ASSERT_EQ(lines.size(), 12u + 2u);
  for (int rank = 0; rank < 12; ++rank) {
    const std::string& line = lines[static_cast<std::size_t>(rank)];
    EXPECT_EQ(line.size(), lines[0].size()) << line;
    EXPECT_EQ(cells_of(line).size(), 80u) << line;
    EXPECT_EQ(line.rfind("rank " + std::string(rank < 10 ? " " : "") + std::to_string(rank) + " |", 0), 0u) << line;
  }
  EXPECT_NE(lines[12].find("F forward"), std::string::npos);
  EXPECT_EQ(lines[13].rfind("1 column = ", 0), 0u);
}

TEST(AsciiGantt, ShowsForwardThenBackwardHalvesOnOneRank) {
  // Four 1 ms forwards then four 1 ms backwards: 8 ms over 16 columns.
  const SimulationReport report = run("GPipe", 1, 4);
  const std::vector<std::string> lines = lines_of(ascii_gantt(report, 16));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "rank 0 |F0F1F2F3B0B1B2B3|");
  EXPECT_EQ(lines[2], "1 column = 0.5 ms");
  const std::string cells = cells_of(lines_of(ascii_gantt(report, 100))[0]);
  EXPECT_EQ(cells.substr(0, 50).find_first_not_of("F0123"), std::string::npos) << cells;
  EXPECT_EQ(cells.substr(50).find_first_not_of("B0123"), std::string::npos) << cells;
}

TEST(AsciiGantt, FillsSpansTooNarrowForTheLabelWithTheKind) {
  const SimulationReport report = run("GPipe", 1, 4);
  EXPECT_EQ(cells_of(lines_of(ascii_gantt(report, 8))[0]), "FFFFBBBB");
  // Wide spans keep the label at the start and the kind letter after it.
  EXPECT_EQ(cells_of(lines_of(ascii_gantt(report, 32))[0]), "F0FFF1FFF2FFF3FFB0BBB1BBB2BBB3BB");
}

TEST(AsciiGantt, MarksIdleTimeWithDots) {
  const SimulationReport report = run("GPipe", 2, 1);
  const std::vector<std::string> lines = lines_of(ascii_gantt(report, 40));
  // Rank 1 waits for rank 0's forward; rank 0 waits for rank 1's backward.
  EXPECT_EQ(cells_of(lines[1]).front(), '.');
  EXPECT_EQ(cells_of(lines[0]).front(), 'F');
  EXPECT_NE(cells_of(lines[0]).find('.'), std::string::npos);
}

TEST(AsciiGantt, IsEmptyWithoutTimelineOrForTooManyRanks) {
  EXPECT_EQ(ascii_gantt(run("GPipe", 2, 2, false)), "");
  EXPECT_EQ(ascii_gantt(run("GPipe", kAsciiMaxRanks + 1, 1)), "");
  EXPECT_NE(ascii_gantt(run("GPipe", kAsciiMaxRanks, 1)), "");
}

}  // namespace
}  // namespace pipeplan::sim
