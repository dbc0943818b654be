// Activation offload (PipeOffload, Wan et al. 2025) in the simulator:
// where the copies go, what they free at each instant of the memory curve,
// and what a slow host link costs. Hand-worked case: 1F1B on 4 ranks, 8
// micro-batches, F 1 ms, B 2 ms, M_B 1 MiB; without offload rank r holds
// 4 - r micro-batches and the step takes (m + p - 1)(F + B) = 33 ms.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/offload.h"
#include "sim/simulate.h"

namespace pipeplan::sim {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

SimulationReport run(const Schedule& schedule, bool offload, double host_bandwidth, bool record = false) {
  RankCosts costs;
  costs.forward_s = {1e-3};
  costs.backward_input_s = {2e-3};
  costs.activation_bytes = {kMiB};
  Topology topology;
  topology.host = {0.0, host_bandwidth};
  SimulationOptions options;
  options.offload_activations = offload;
  options.record_timeline = record;
  return simulate(schedule, expand_rank_costs(costs, schedule), topology, options);
}

TEST(Offload, CopiesGoAroundTheMicroBatchesThatWait) {
  const Schedule lowered = lower_communication(generate_schedule("1F1B", {4, 8, 0, 0}), RecvPlacement::kBeforeUse);
  const Schedule copied = add_host_copies(lowered);
  const auto copies = [](const std::vector<Action>& actions) {
    return std::count_if(actions.begin(), actions.end(), [](const Action& a) { return is_host_copy(a.kind); });
  };
  // Ranks 0-2 hold every micro-batch across other compute: an OFFLOAD and
  // a RELOAD each; the last rank's B follows its F at once: none.
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(copies(copied.actions[static_cast<std::size_t>(rank)]), 16) << rank;
  EXPECT_EQ(copies(copied.actions[3]), 0);
  // Rank 0: OFFLOAD right after F0, micro-batch 0's RELOAD right before F3
  // (the compute action ahead of B0).
  const std::vector<Action>& rank0 = copied.actions[0];
  const auto at = [&](const Action& action) { return std::find(rank0.begin(), rank0.end(), action) - rank0.begin(); };
  EXPECT_EQ(at({0, 0, OpKind::kOffload, false}), at({0, 0, OpKind::kForward, false}) + 1);
  EXPECT_EQ(at({0, 0, OpKind::kReload, false}) + 1, at({0, 3, OpKind::kForward, false}));
}

TEST(Offload, FreesWhatTheCurveSaysAndHidesBehindTheCompute) {
  const Schedule schedule = generate_schedule("1F1B", {4, 8, 0, 0});
  const SimulationReport kept = run(schedule, false, 0.0);
  // A copy of 1 MiB at 100 GB/s takes 10.5 us, well inside a forward.
  const SimulationReport offloaded = run(schedule, true, 100e9, true);
  EXPECT_DOUBLE_EQ(kept.cost_s, 33e-3);
  EXPECT_NEAR(offloaded.cost_s, kept.cost_s, 1e-12);
  EXPECT_EQ(offloaded.host_copies, 48u);
  // Rank 0 at F3's start holds micro-batch 0 (its reload issued), 3 (F3)
  // and 2 (its offload still copying): 3 MiB, against 4 kept. Micro-batches
  // 1 and 2 and the reloading 0 are then on the host.
  EXPECT_EQ(kept.ranks_detail[0].peak_activation_bytes, 4 * kMiB);
  EXPECT_EQ(offloaded.ranks_detail[0].peak_activation_bytes, 3 * kMiB);
  EXPECT_EQ(offloaded.ranks_detail[0].peak_host_bytes, 3 * kMiB);
  EXPECT_EQ(offloaded.ranks_detail[3].peak_activation_bytes, kMiB);
  EXPECT_EQ(offloaded.ranks_detail[3].peak_host_bytes, 0);
  ASSERT_TRUE(offloaded.timeline);
  for (int rank = 0; rank < 4; ++rank) {
    const std::vector<MemorySample>& curve = offloaded.timeline->memory[static_cast<std::size_t>(rank)];
    std::int64_t device_peak = 0, host_peak = 0, device = 0, host = 0;
    int landed = 0;
    for (const MemorySample& sample : curve) {
      // An offload landing moves exactly M_B from the device to the host.
      if (sample.host_bytes > host) {
        EXPECT_EQ(sample.host_bytes - host, kMiB) << rank;
        EXPECT_EQ(device - sample.activation_bytes, kMiB) << rank;
        ++landed;
      }
      device = sample.activation_bytes;
      host = sample.host_bytes;
      device_peak = std::max(device_peak, device);
      host_peak = std::max(host_peak, host);
    }
    // The report's peaks are the curve's; every copy is back by the end.
    const RankReport& report = offloaded.ranks_detail[static_cast<std::size_t>(rank)];
    EXPECT_EQ(report.peak_activation_bytes, device_peak) << rank;
    EXPECT_EQ(report.peak_host_bytes, host_peak) << rank;
    EXPECT_EQ(landed, rank < 3 ? 8 : 0) << rank;
    EXPECT_EQ(device, 0) << rank;
    EXPECT_EQ(host, 0) << rank;
  }
}

TEST(Offload, ASlowHostLinkDelaysTheBackwards) {
  const Schedule schedule = generate_schedule("1F1B", {4, 8, 0, 0});
  // 1 MiB at 0.35 GB/s: 3 ms a copy, as long as F + B: rank 0's eight
  // offloads queue on its one device-to-host link, each reload waits for
  // its offload and each backward for its reload, so at least one copy's
  // time shows in the step.
  const double copy_s = static_cast<double>(kMiB) / 0.35e9;
  const SimulationReport slow = run(schedule, true, 0.35e9);
  EXPECT_GT(slow.cost_s, 33e-3 + copy_s);
  EXPECT_NEAR(slow.ranks_detail[0].busy_s, 24e-3, 1e-12);  // the compute is the same
}

TEST(Offload, NeedsAHostLinkAndRefusesPairs) {
  EXPECT_THROW(run(generate_schedule("1F1B", {4, 8, 0, 0}), true, 0.0), InputError);
  EXPECT_THROW(run(generate_schedule("DualPipeV", {4, 8, 0, 0}), true, 100e9), InputError);
}

}  // namespace
}  // namespace pipeplan::sim
