// PyTorch's schedule CSV (torch.distributed.pipelining _dump_csv/_load_csv):
// one row per rank, one action per cell, empty cell = idle.
#include "sim/schedule_csv.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

const std::string kData = PIPEPLAN_TEST_DATA_DIR;

Schedule read_text(const std::string& text) {
  std::istringstream in(text);
  return read_schedule_csv(in, "inline.csv");
}

void expect_same(const Schedule& a, const Schedule& b) {
  EXPECT_EQ(a.ranks, b.ranks);
  EXPECT_EQ(a.stages, b.stages);
  EXPECT_EQ(a.microbatches, b.microbatches);
  EXPECT_EQ(a.stage_to_rank, b.stage_to_rank);
  EXPECT_EQ(a.actions, b.actions);
}

TEST(ScheduleCsv, RoundTripsEveryGeneratedScheduleBothForms) {
  for (const ScheduleFamily& family : schedule_families()) {
    const Schedule schedule = testing::family_schedule(family.name, {4, 8, 0, 0});
    expect_same(read_text(write_schedule_csv(schedule)), schedule);
    const Schedule lowered = lower_communication(schedule, RecvPlacement::kBeforeUse);
    expect_same(read_text(write_schedule_csv(lowered)), lowered);
  }
}

// Random small files over every cell form the reader knows (PyTorch's
// names, 2.5's "BW", idle cells, overlapped pairs, runtime cells, quotes):
// whatever it accepts, it reads back as written.
std::string random_csv(std::mt19937& rng) {
  const char* kinds[] = {"F", "B", "I", "W", "BW", "SEND_F", "RECV_B"};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto cell = [&] {
    switch (pick(10)) {
      case 0: return std::string();
      case 1: return fmt::format("({}F{};{}{}{})OVERLAP_F_B", pick(3), pick(3), pick(3), kinds[1 + pick(4)], pick(3));
      case 2: return fmt::format("{}REDUCE_GRAD", pick(3));
      case 3: return fmt::format("\"{}F{}\"", pick(3), pick(3));
      default: return fmt::format("{}{}{}", pick(3), kinds[pick(7)], pick(3));
    }
  };
  std::string text;
  const int ranks = 1 + pick(3);
  for (int rank = 0; rank < ranks; ++rank) {
    const int cells = 1 + pick(8);
    for (int c = 0; c < cells; ++c) {
      if (c > 0) text += ',';
      text += cell();
    }
    text += '\n';
  }
  return text;
}

TEST(ScheduleCsv, WhatTheReaderAcceptsReadsBackAsWritten) {
  std::mt19937 rng(20261201);
  int accepted = 0;
  for (int trial = 0; trial < 50000; ++trial) {
    const std::string text = random_csv(rng);
    Schedule schedule;
    try {
      schedule = read_text(text);
    } catch (const InputError&) {
      continue;
    }
    ++accepted;
    const Schedule again = read_text(write_schedule_csv(schedule));
    SCOPED_TRACE(text);
    expect_same(again, schedule);
    EXPECT_EQ(again.idle_slots, schedule.idle_slots);
    if (::testing::Test::HasFailure()) break;
  }
  // The property is exercised, not vacuous.
  EXPECT_GT(accepted, 500);
}

TEST(ScheduleCsv, WritesOneRowPerRankInPyTorchActionForm) {
  const Schedule schedule = generate_schedule("1F1B", {2, 2, 1, 0});
  EXPECT_EQ(write_schedule_csv(schedule), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

TEST(ScheduleCsv, InfersShapeAndVPlacementFromCells) {
  const Schedule schedule = read_schedule_csv_file(kData + "/dualpipev_2rank_4mb.csv");
  EXPECT_EQ(schedule.ranks, 2);
  EXPECT_EQ(schedule.stages, 4);
  EXPECT_EQ(schedule.microbatches, 4);
  EXPECT_EQ(placement_name(schedule.stage_to_rank, 2), "v");
  // "(0F2;3B1)OVERLAP_F_B" is a forward paired with the backward after it.
  const auto& rank0 = schedule.actions[0];
  const auto pair = std::find_if(rank0.begin(), rank0.end(), [](const Action& a) { return a.overlapped; });
  ASSERT_NE(pair, rank0.end());
  EXPECT_EQ(*pair, (Action{0, 2, OpKind::kForward, true}));
  EXPECT_EQ(*(pair + 1), (Action{3, 1, OpKind::kBackward}));
  EXPECT_NO_THROW(testing::simulate_uniform(schedule, {2, 2, 2}));
}

TEST(ScheduleCsv, SimulatesScheduleWithCommunicationCells) {
  const Schedule schedule = read_schedule_csv_file(kData + "/zb1p_2rank_with_comms.csv");
  EXPECT_TRUE(schedule.has_comm());
  const SimulationReport report = testing::simulate_uniform(schedule, {1, 1, 1, 0.25});
  EXPECT_EQ(report.compute_actions, 2u * 4u * 3u);
  EXPECT_GT(report.makespan_s, 12.0);  // 4 x (F+I+W) per rank plus the pipeline fill
}

TEST(ScheduleCsv, ReadsPyTorch25SpellingWhereBWasInputGradient) {
  const Schedule schedule = read_schedule_csv_file(kData + "/legacy_2rank.csv");
  EXPECT_EQ(schedule.actions[0][2], (Action{0, 0, OpKind::kBackwardInput}));
  EXPECT_EQ(schedule.actions[1][1], (Action{1, 0, OpKind::kBackward}));
  EXPECT_NO_THROW(testing::simulate_uniform(schedule, {1, 1, 1}));
}

TEST(ScheduleCsv, LoopPlacementFromInterleavedFile) {
  const Schedule schedule = read_schedule_csv_file(kData + "/interleaved_2rank_4stage.csv");
  EXPECT_EQ(placement_name(schedule.stage_to_rank, 2), "loop");
  EXPECT_EQ(schedule.virtual_stages(), 2);
  EXPECT_NO_THROW(testing::simulate_uniform(schedule, {1, 2}));
}

TEST(ScheduleCsv, BadCellsNameLineAndColumn) {
  try {
    read_text("0F0,0B0\n1F0,1Q0,1B0\n");
    FAIL() << "no error";
  } catch (const ParseError& error) {
    EXPECT_EQ(error.line(), 2);
    EXPECT_EQ(error.column(), 5);
    EXPECT_NE(std::string(error.what()).find("1Q0"), std::string::npos);
  }
  EXPECT_THROW(read_text(""), ParseError);
  EXPECT_THROW(read_text("0F0,0B0\n0F1,0B1\n"), ParseError);        // stage 0 on two ranks
  EXPECT_THROW(read_text("0F0,0B0,2F0,2B0\n1F0,1B0\n"), ParseError);  // uneven stages per rank
  EXPECT_THROW(read_text("0F0,0UNSHARDX,0B0\n"), ParseError);
  EXPECT_THROW(read_text("(0F0)OVERLAP_F_B\n"), ParseError);
}

}  // namespace
}  // namespace pipeplan::sim
