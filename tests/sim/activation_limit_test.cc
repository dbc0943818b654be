// --activation-limit's three forms and what each allows a rank.
#include "sim/search/activation_limit.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

TEST(ActivationLimit, ReadsBytesMicrobatchesAndMultiplesOfP) {
  const ActivationLimit bytes = parse_activation_limit("12GiB", "--activation-limit");
  EXPECT_EQ(bytes.bytes(8, 1000), 12LL << 30);
  EXPECT_EQ(bytes.describe(), "12.00 GiB");
  const ActivationLimit count = parse_activation_limit("16", "--activation-limit");
  EXPECT_EQ(count.bytes(8, 1000), 16000);
  EXPECT_EQ(count.describe(), "16 x M_B");
  const ActivationLimit depth = parse_activation_limit("2p", "--activation-limit");
  EXPECT_EQ(depth.bytes(8, 1000), 16000);
  EXPECT_EQ(depth.describe(), "2p x M_B");
  EXPECT_EQ(parse_activation_limit("p", "--activation-limit").bytes(8, 1000), 8000);
  EXPECT_EQ(parse_activation_limit("1.5p", "--activation-limit").bytes(8, 1000), 12000);
  // A plain number counts micro-batches however it is written; bytes take a unit.
  EXPECT_EQ(parse_activation_limit("2e1", "--activation-limit").bytes(8, 1000), 20000);
  EXPECT_EQ(parse_activation_limit("2e1B", "--activation-limit").bytes(8, 1000), 20);
  EXPECT_EQ(parse_activation_limit("99999999", "--activation-limit").describe(), "99999999 x M_B");
}

TEST(ActivationLimit, RefusesWhatIsNotAPositiveAmount) {
  for (const char* text : {"", "0", "-1", "0p", "-2p", "xp", "nan", "inf", "1e400"}) {
    EXPECT_THROW(parse_activation_limit(text, "--activation-limit"), InputError) << text;
  }
}

}  // namespace
}  // namespace pipeplan::sim
