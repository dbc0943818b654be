// Action text form: PyTorch's "<stage><kind><micro-batch>" (torch.distributed.pipelining _Action).
#include "sim/action.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

TEST(ActionText, PrintsPyTorchForm) {
  EXPECT_EQ(to_string({2, 0, OpKind::kForward}), "2F0");
  EXPECT_EQ(to_string({1, 3, OpKind::kBackward}), "1B3");
  EXPECT_EQ(to_string({0, 2, OpKind::kBackwardWeight}), "0W2");
  EXPECT_EQ(to_string({4, 7, OpKind::kBackwardInput}), "4I7");
  EXPECT_EQ(to_string({3, 1, OpKind::kSendForward}), "3SEND_F1");
  EXPECT_EQ(to_string({3, 1, OpKind::kRecvBackward}), "3RECV_B1");
}

// Every kind a schedule may hold; RECOMPUTE and the host copies are placed
// by the simulator and never read.
TEST(ActionText, RoundTripsEveryKind) {
  for (int kind = 0; kind <= static_cast<int>(OpKind::kRecvBackward); ++kind) {
    const Action action{12, 345, static_cast<OpKind>(kind)};
    if (action.kind == OpKind::kRecompute) {
      EXPECT_EQ(to_string(action), "12RECOMPUTE345");
      EXPECT_THROW(parse_action(to_string(action)), InputError);
      continue;
    }
    EXPECT_EQ(parse_action(to_string(action)), action) << to_string(action);
  }
}

TEST(ActionText, ReadsLegacyFullBackward) {
  // PyTorch 2.5 wrote a full backward as "BW".
  EXPECT_EQ(parse_action("2BW5"), (Action{2, 5, OpKind::kBackward}));
}

TEST(ActionText, RejectsMalformedText) {
  for (const char* bad : {"", "F0", "2X0", "2F", "2F0x", "-1F0", "2SEND0", "2UNSHARD"}) {
    EXPECT_THROW(parse_action(bad), InputError) << bad;
  }
}

}  // namespace
}  // namespace pipeplan::sim
