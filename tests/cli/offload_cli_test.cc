// Activation offload through `simulate`: what it needs (activations to
// copy, a host link with a unit), and a plan replayed with it says it was
// re-costed rather than blaming the model for the change.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_support.h"

namespace pipeplan::testing {
namespace {

using nlohmann::json;

TEST(OffloadCli, BadInputGetsOneLine) {
  const std::string times = "simulate --schedule 1F1B -p 4 -m 8 --tf 1 --tb 2";
  expect_refused(times + " --offload --host-bandwidth 50GB/s", "--act-bytes");
  expect_refused(times + " --act-bytes 1GiB --offload", "--host-bandwidth");
  expect_refused(times + " --act-bytes 1GiB --host-bandwidth 50GB/s", "add --offload");
  expect_refused(times + " --act-bytes 1GiB --offload --host-bandwidth 100", "give a unit");
  expect_refused(times + " --link-bandwidth 100", "give a unit");
  expect_refused("simulate --model tiny --hardware cpu -p 2 -m 4 --offload", "host_link");
  expect_refused("simulate --schedule DualPipeV -p 4 -m 8 --tf 1 --tb 2 --tw 1 --act-bytes 1GiB --offload "
                 "--host-bandwidth 50GB/s",
                 "overlapped forward-and-backward pairs");
}

TEST(OffloadCli, APlanReplayedWithOffloadIsRecostedNotStale) {
  const std::string plan = written_plan("offload-plan.yaml", "--pp 4 --schedule 1F1B --micro-batch-size 1");
  ASSERT_FALSE(plan.empty());
  const CommandResult result = run("simulate --plan " + plan + " --offload --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const json report = json::parse(result.out);
  EXPECT_EQ(report["plan_overrides"], json::array({"--offload"}));
  EXPECT_FALSE(report.contains("notes")) << report["notes"];
  EXPECT_GT(report["host_copies"].get<int>(), 0);
  EXPECT_TRUE(report["critical_path_ms"].is_null());
  EXPECT_GT(report["ranks_detail"][0]["peak_host_bytes"].get<double>(), 0);
}

}  // namespace
}  // namespace pipeplan::testing
