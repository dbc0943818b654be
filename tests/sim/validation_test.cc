// Schedule validation: every compute action once, order on each rank,
// communication present, and deadlocks found as cycles in the dependency
// graph and shown on the rank-by-step grid.
#include "sim/validation.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/schedule_csv.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

Schedule two_ranks(std::vector<Action> rank0, std::vector<Action> rank1, int m) {
  Schedule schedule;
  schedule.name = "hand-made";
  schedule.ranks = 2;
  schedule.stages = 2;
  schedule.microbatches = m;
  schedule.stage_to_rank = {0, 1};
  schedule.actions = {std::move(rank0), std::move(rank1)};
  return schedule;
}

std::string error_of(const Schedule& schedule) {
  try {
    validate_schedule(schedule);
  } catch (const ScheduleError& error) {
    return std::string(error.what()) + "\n" + error.detail();
  }
  return "";
}

constexpr OpKind F = OpKind::kForward, B = OpKind::kBackward, I = OpKind::kBackwardInput,
                 W = OpKind::kBackwardWeight;

TEST(Validation, HandMadeDeadlockIsRejectedWithMarkedGrid) {
  // Rank 0 runs 0B0 before 0F1; rank 1 wants 0F1's output (for 1F1)
  // before it produces 0B0's gradient (1B0): a cycle across ranks.
  const Schedule schedule = read_schedule_csv_file(std::string(PIPEPLAN_TEST_DATA_DIR) + "/deadlock_2rank.csv");
  const std::string message = error_of(schedule);
  EXPECT_NE(message.find("deadlocks"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 0, step"), std::string::npos) << message;
  EXPECT_NE(message.find("[0B0]"), std::string::npos) << message;  // the offending cells
  EXPECT_NE(message.find("[1F1]"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
}

TEST(Validation, LoweredDeadlockMarksTheBlockedReceives) {
  const Schedule schedule = read_schedule_csv_file(std::string(PIPEPLAN_TEST_DATA_DIR) + "/deadlock_2rank.csv");
  try {
    validate_schedule(lower_communication(schedule, RecvPlacement::kBeforeUse));
    FAIL() << "no deadlock found";
  } catch (const ScheduleError& error) {
    EXPECT_NE(error.detail().find("[0RECV_B0]"), std::string::npos) << error.detail();
    EXPECT_NE(error.detail().find("[1RECV_F1]"), std::string::npos) << error.detail();
  }
}

TEST(Validation, ReportsMissingAndDuplicateActions) {
  EXPECT_NE(error_of(two_ranks({{0, 0, F}}, {{1, 0, F}, {1, 0, B}}, 1)).find("never runs 0B0"), std::string::npos);
  EXPECT_NE(error_of(two_ranks({{0, 0, F}, {0, 0, F}, {0, 0, B}}, {{1, 0, F}, {1, 0, B}}, 1)).find("appears twice"),
            std::string::npos);
  EXPECT_NE(error_of(two_ranks({{0, 0, F}, {0, 0, I}}, {{1, 0, F}, {1, 0, B}}, 1)).find("0W0"), std::string::npos);
  EXPECT_NE(error_of(two_ranks({{0, 0, F}, {0, 0, B}, {0, 0, W}}, {{1, 0, F}, {1, 0, B}}, 1)).find("keep one"),
            std::string::npos);
}

TEST(Validation, ReportsOrderOnARank) {
  EXPECT_NE(error_of(two_ranks({{0, 0, B}, {0, 0, F}}, {{1, 0, F}, {1, 0, B}}, 1)).find("before its forward"),
            std::string::npos);
  EXPECT_NE(error_of(two_ranks({{0, 0, F}, {0, 0, W}, {0, 0, I}}, {{1, 0, F}, {1, 0, B}}, 1))
                .find("before its input-gradient"),
            std::string::npos);
}

TEST(Validation, ReportsMisplacedStageAndRanges) {
  EXPECT_NE(error_of(two_ranks({{1, 0, F}}, {{1, 0, B}}, 1)).find("lives on rank 1"), std::string::npos);
  EXPECT_NE(error_of(two_ranks({{0, 3, F}}, {}, 1)).find("outside"), std::string::npos);
}

TEST(Validation, ReportsMissingOrMisplacedCommunication) {
  Schedule lowered = lower_communication(generate_schedule("1F1B", {2, 2, 1, 0}), RecvPlacement::kBeforeUse);
  auto& rank1 = lowered.actions[1];
  rank1.erase(rank1.begin());  // drop 1RECV_F0
  EXPECT_THROW(validate_schedule(lowered), ScheduleError);

  Schedule late_recv = lower_communication(generate_schedule("1F1B", {2, 2, 1, 0}), RecvPlacement::kBeforeUse);
  std::swap(late_recv.actions[1][0], late_recv.actions[1][1]);  // 1F0 before 1RECV_F0
  try {
    validate_schedule(late_recv);
    FAIL();
  } catch (const ScheduleError& error) {
    EXPECT_NE(std::string(error.what()).find("after its data is needed"), std::string::npos) << error.what();
  }
}

TEST(Validation, RefusesReceivesFromPastEitherEnd) {
  // The first stage has no stage before it, the last none after it.
  for (const OpKind recv : {OpKind::kRecvForward, OpKind::kRecvBackward}) {
    Schedule lowered = lower_communication(generate_schedule("1F1B", {2, 2, 1, 0}), RecvPlacement::kBeforeUse);
    const int stage = recv == OpKind::kRecvForward ? 0 : 1;
    lowered.actions[static_cast<std::size_t>(stage)].insert(lowered.actions[static_cast<std::size_t>(stage)].begin(),
                                                            Action{stage, 0, recv});
    EXPECT_NE(error_of(lowered).find("receives from a stage past the pipeline's end"), std::string::npos)
        << error_of(lowered);
  }
}

TEST(Validation, AcceptsEveryGeneratedSchedule) {
  for (const ScheduleFamily& family : schedule_families()) {
    for (RecvPlacement placement : {RecvPlacement::kBeforeUse, RecvPlacement::kPyTorch}) {
      EXPECT_NO_THROW(validate_schedule(lower_communication(testing::family_schedule(family.name, {4, 8, 0, 0}), placement)))
          << family.name;
    }
  }
}

}  // namespace
}  // namespace pipeplan::sim
