// PyTorch's lowering and step count, against the expected schedules of
// PyTorch's own tests (test/distributed/pipelining/test_schedule.py,
// test_send_recv: "simple_2_rank_2_stage" and "v_2_rank_4_stage", whose
// compute-only rows carry idle cells).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "common/error.h"
#include "sim/lowering.h"
#include "sim/pytorch_steps.h"
#include "sim/schedule_csv.h"
#include "sim/validation.h"

namespace pipeplan::sim {
namespace {

Schedule from_csv(const std::string& text) {
  std::istringstream in(text);
  return read_schedule_csv(in, "test.csv");
}

struct Fixture {
  std::string compute;
  std::string comms;
  int steps;
};

const Fixture kSimple{
    "0F0,0F1,,0B0,,0B1\n"
    ",1F0,1B0,1F1,1B1,\n",
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
    "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n",
    11};

// PyTorch's fixture spells the input-gradient halves "B" beside their "W";
// they are written as I here, which PyTorch lowers the same way.
const Fixture kV{
    "0F0,0F1,,3F0,3I0,3F1,3I1,0I0,3W0,0I1,3W1,0W0,0W1\n"
    ",1F0,2F0,1F1,2F1,2I0,1I0,2I1,1I1,2W0,2W1,1W0,1W1\n",
    "0F0,0SEND_F0,0F1,0SEND_F1,3RECV_F0,3F0,3I0,3SEND_B0,3RECV_F1,3F1,3I1,3SEND_B1,0RECV_B0,0I0,3W0,0RECV_B1,0I1,"
    "3W1,0W0,0W1\n"
    "1RECV_F0,1RECV_F1,1F0,2F0,2SEND_F0,1F1,2RECV_B0,2F1,2SEND_F1,2I0,2RECV_B1,1I0,1SEND_B0,2I1,1I1,1SEND_B1,2W0,"
    "2W1,1W0,1W1\n",
    24};

TEST(PyTorchLowering, MatchesPyTorchsAddSendRecvWithIdleCells) {
  for (const Fixture* fixture : {&kSimple, &kV}) {
    const Schedule lowered = lower_communication(from_csv(fixture->compute), RecvPlacement::kPyTorch);
    EXPECT_EQ(write_schedule_csv(lowered), fixture->comms);
    EXPECT_NO_THROW(validate_schedule(lowered));
  }
}

TEST(PyTorchLowering, CountsPyTorchsSimulatedSteps) {
  for (const Fixture* fixture : {&kSimple, &kV}) {
    EXPECT_EQ(pytorch_step_count(from_csv(fixture->comms)), fixture->steps);
    EXPECT_EQ(pytorch_step_count(lower_communication(from_csv(fixture->compute), RecvPlacement::kPyTorch)),
              fixture->steps);
  }
}

TEST(PyTorchLowering, IdleCellsRoundTripThroughTheCsv) {
  EXPECT_EQ(write_schedule_csv(from_csv(kSimple.compute)), kSimple.compute);
  EXPECT_EQ(write_schedule_csv(from_csv(kV.compute)), kV.compute);
}

TEST(PyTorchLowering, BeforeUsePlacesEachReceiveJustBeforeItsConsumer) {
  const Schedule lowered = lower_communication(from_csv(kSimple.compute), RecvPlacement::kBeforeUse);
  EXPECT_EQ(write_schedule_csv(lowered),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
            "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
}

TEST(PyTorchLowering, RuntimeCellsAreDroppedAndCounted) {
  const Schedule schedule = from_csv("0UNSHARD,0F0,0F1,0B0,0B1,0REDUCE_GRAD,0RESHARD\n");
  EXPECT_EQ(schedule.dropped_runtime_actions, 3u);
  EXPECT_EQ(write_schedule_csv(schedule), "0F0,0F1,0B0,0B1\n");
}

TEST(PyTorchStepCount, ADeadlockIsReportedNotHung) {
  EXPECT_THROW(pytorch_step_count(from_csv("0RECV_B0,0F0,0SEND_F0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n")),
               pipeplan::ScheduleError);
}

}  // namespace
}  // namespace pipeplan::sim
