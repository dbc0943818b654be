// `pipeplan profile gemm`: shapes parsed and refused, the CPU backend's
// sweep (a rate is FLOPs over the median), its YAML, and the command
// setting the time model's estimate beside the measurement.
#include "profiler/gemm_sweep.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "common/error.h"
#include "tests/support/cli_support.h"
#include "tests/support/gemm_sweep_checks.h"

namespace pipeplan::profiler {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_gemm_sizes(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(GemmSweep, ParsesShapesAndRefusesBadOnesNamingThem) {
  const std::vector<GemmSize> sizes = parse_gemm_sizes("4096x4096x4096,8192x1280x8192");
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[1].m, 8192);
  EXPECT_EQ(sizes[1].n, 1280);
  EXPECT_EQ(sizes[1].k, 8192);
  EXPECT_DOUBLE_EQ(sizes[1].flops(), 2.0 * 8192 * 1280 * 8192);
  for (const std::string bad : {"12x3", "0x4x4", "4x4x-1", "4x4x4x4", "ax4x4", "4x4x4,", "", "999999999x4x4"}) {
    EXPECT_NE(parse_error(bad).find("--shapes"), std::string::npos) << bad;
  }
}

TEST(GemmSweep, DefaultSweepsCoverSquaresAndEachLinearsThreeProducts) {
  const std::vector<GemmSize> gpu = gpu_gemm_sizes();
  // 5 squares, then 6 linears x 3 products at each of 2 token counts.
  ASSERT_EQ(gpu.size(), 5u + 2 * 6 * 3);
  // Llama 3 8B's fc1 at 2048 tokens: F [2048 x 4096] x [4096 x 28672], I and W transposed.
  EXPECT_EQ(gpu[8].label, "llama3-8b fc1 F, 2048 tokens");
  EXPECT_EQ(gpu[8].m, 2048);
  EXPECT_EQ(gpu[8].n, 28672);
  EXPECT_EQ(gpu[8].k, 4096);
  EXPECT_EQ(gpu[9].n, 4096);
  EXPECT_EQ(gpu[9].k, 28672);
  EXPECT_EQ(gpu[10].m, 4096);
  EXPECT_EQ(gpu[10].k, 2048);
  for (const GemmSize& size : gpu) EXPECT_FALSE(size.label.empty());
  EXPECT_FALSE(cpu_gemm_sizes().empty());
}

TEST(GemmSweep, CpuRatesAreFlopsOverTheMedian) {
  const GemmSweep sweep = measure_gemms_cpu({{64, 96, 128, "a"}, {32, 32, 32, ""}}, 1, 3);
  EXPECT_EQ(sweep.backend, "cpu");
  EXPECT_EQ(sweep.dtype, "fp32");
  ASSERT_EQ(sweep.shapes.size(), 2u);
  testing::expect_consistent_sweep(sweep, 3);
  EXPECT_THROW(measure_gemms_cpu({{4, 4, 4, ""}}, 0, 0), InputError);
  // Operands the host cannot hold (3 x 64 GiB of fp32) are refused before Eigen allocates.
  EXPECT_THROW(measure_gemms_cpu({{131072, 131072, 131072, ""}}, 0, 1), InputError);
  // The YAML lists every shape with its time and rate.
  const YAML::Node yaml = YAML::Load(write_gemm_sweep_yaml(sweep));
  EXPECT_EQ(yaml["backend"].as<std::string>(), "cpu");
  EXPECT_EQ(yaml["software"].as<std::string>().rfind("Eigen 3.", 0), 0u);
  ASSERT_EQ(yaml["gemms"].size(), 2u);
  EXPECT_EQ(yaml["gemms"][0]["k"].as<int>(), 128);
  EXPECT_EQ(yaml["gemms"][0]["what"].as<std::string>(), "a");
  EXPECT_FALSE(yaml["gemms"][1]["what"]);
  EXPECT_DOUBLE_EQ(yaml["gemms"][1]["median_s"].as<double>(), sweep.shapes[1].time.median_s);
}

TEST(GemmSweepCli, PrintsTheTimeModelBesideTheMeasurement) {
  const std::string out = testing::temp_path("gemm.yaml");
  const testing::CommandResult result =
      testing::run("profile gemm --shapes 64x64x64,128x64x32 --repeats 2 --hardware h100-sxm --out " + out);
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("model ms"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("model: h100-sxm"), std::string::npos) << result.out;
  EXPECT_EQ(YAML::LoadFile(out)["gemms"].size(), 2u);
}

TEST(GemmSweepCli, RefusesOptionsItWouldIgnoreAndUnknownBackends) {
  testing::CommandResult result =
      testing::run("profile --tp 2 gemm --shapes 8x8x8 --out " + testing::temp_path("g.yaml"));
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("--tp"), std::string::npos) << result.err;
  result = testing::run("profile gemm --backend rocm --out " + testing::temp_path("g.yaml"));
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("use cpu or cuda"), std::string::npos) << result.err;
  result = testing::run("profile gemm --shapes 8x8 --out " + testing::temp_path("g.yaml"));
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("'8x8'"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace pipeplan::profiler
