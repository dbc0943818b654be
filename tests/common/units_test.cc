// Quantities with units as users write them ("80GiB", "50GB/s", "1.2ms").
#include "common/units.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace pipeplan {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("80GiB", "x"), 80LL << 30);
  EXPECT_EQ(parse_bytes("1.5GB", "x"), 1'500'000'000LL);
  EXPECT_EQ(parse_bytes("512", "x"), 512);
  EXPECT_EQ(parse_bytes(" 2 MiB ", "x"), 2LL << 20);
}

TEST(Units, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration_s("1.2ms", "x", 1.0), 1.2e-3);
  EXPECT_DOUBLE_EQ(parse_duration_s("800us", "x", 1.0), 800e-6);
  EXPECT_DOUBLE_EQ(parse_duration_s("3", "x", 1e-3), 3e-3);
  EXPECT_DOUBLE_EQ(parse_duration_s("2s", "x", 1e-3), 2.0);
}

TEST(Units, Bandwidth) {
  // InfiniBand NDR: 400 Gb/s = 50 GB/s per port per direction (reference.md).
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s", "x"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GB/s", "x"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s", "x"), 1073741824.0);
}

TEST(Units, RejectsBadValuesNamingTheField) {
  for (const char* bad : {"-1", "nan", "inf", "abc", "12XB", ""}) {
    try {
      parse_bytes(bad, "--act-bytes");
      FAIL() << bad;
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("--act-bytes"), std::string::npos);
    }
  }
  EXPECT_THROW(parse_duration_s("1.2parsecs", "--tf", 1e-3), InputError);
  EXPECT_THROW(parse_bandwidth("-5GB/s", "--link-bandwidth"), InputError);
  EXPECT_THROW(parse_non_negative("3x", "--n"), InputError);
}

TEST(Units, Formats) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3LL << 30), "3.00 GiB");
  // Four digits step up to the next unit: 1002 MiB is 0.98 GiB.
  EXPECT_EQ(format_bytes(1002.0 * (1 << 20)), "0.98 GiB");
  EXPECT_EQ(format_bytes(999.0 * (1 << 20)), "999.00 MiB");
  EXPECT_EQ(format_bytes(1000), "0.98 KiB");
  EXPECT_EQ(format_duration(0.0123456), "12.35 ms");
  EXPECT_EQ(format_duration(28.578308), "28.58 s");
  EXPECT_EQ(format_duration(1117.810193), "18.63 min");
  EXPECT_EQ(format_duration(0.00085), "850.0 us");
  EXPECT_EQ(format_duration(30.1), "30.10 s");
  EXPECT_EQ(format_duration(67.3 * 86400), "67.30 days");
  EXPECT_EQ(format_duration(0), "0 s");
}

}  // namespace
}  // namespace pipeplan
