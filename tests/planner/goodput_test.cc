// Failures, checkpoints and goodput: the closed forms of Young (1974) and
// Daly (2006) evaluated by hand, Llama 3's interruption rate recovered from
// the defaults, a hand-worked checkpoint, and the Monte Carlo runs against
// Daly's expected time.
#include "planner/goodput/goodput.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "models/cluster.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "models/reliability.h"
#include "planner/goodput/checkpoint.h"
#include "planner/goodput/run_monte_carlo.h"
#include "planner/search/plan_search.h"
#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan {
namespace {

TEST(Goodput, YoungsIntervalIsSqrtTwoDeltaM) {
  // J. W. Young, "A first order approximation to the optimum checkpoint
  // interval", CACM 17(9), 1974: tau = sqrt(2 delta M). delta = 60 s, M =
  // 3 h: sqrt(2 x 60 x 10800) = 1138.4 s.
  EXPECT_DOUBLE_EQ(planner::young_interval_s(60, 10800), std::sqrt(1296000.0));
  EXPECT_NEAR(planner::young_interval_s(60, 10800), 1138.42, 0.01);
}

TEST(Goodput, DalysIntervalIsHisHigherOrderForm) {
  // J. T. Daly, "A higher order estimate of the optimum checkpoint interval
  // for restart dumps", FGCS 22(3), 2006, eq. 37. delta = 60 s, M = 3 h:
  // x = delta / 2M = 1/360; sqrt(2 delta M) (1 + sqrt(x)/3 + x/9) - delta.
  const double x = 1.0 / 360;
  EXPECT_DOUBLE_EQ(planner::daly_interval_s(60, 10800),
                   std::sqrt(1296000.0) * (1 + std::sqrt(x) / 3 + x / 9) - 60);
  EXPECT_NEAR(planner::daly_interval_s(60, 10800), 1098.77, 0.01);
  // A checkpoint as long as 2M or more: checkpoint every M.
  EXPECT_EQ(planner::daly_interval_s(7200, 3600), 3600);
}

TEST(Goodput, DalysExpectedTimeHasItsLimits) {
  // Daly's eq. 13: M e^(R/M) (e^((tau + delta)/M) - 1) T / tau. By hand at
  // T = 100 h, tau = 1 h, delta = 0.1 h, R = 0.2 h, M = 10 h.
  const double hour = 3600;
  const double by_hand = 10 * std::exp(0.02) * (std::exp(0.11) - 1) * 100 * hour;
  EXPECT_NEAR(planner::expected_wall_s(100 * hour, hour, 0.1 * hour, 0.2 * hour, 10 * hour), by_hand, 1e-6);
  // Failures rare: the work and its checkpoints.
  EXPECT_NEAR(planner::expected_wall_s(100, 10, 1, 5, 1e12) / 110, 1, 1e-9);
}

TEST(Goodput, FailureCausesAreReadAndChecked) {
  // The defaults: Llama 3's 78 % hardware take a node out.
  EXPECT_NEAR(models::default_reliability().node_out_share(), 0.78, 1e-12);
  const std::string plan = testing::kData + "/llama3-8b-64-h100.plan.yaml";
  const std::string over = testing::write_temp(
      "causes_over.yaml", "causes: [{name: GPU, share: 70%}, {name: software, share: 40%, node_out: false}]\n");
  testing::expect_refused("goodput --plan " + plan + " --reliability " + over, "add up to 1.1, over 1");
  const std::string given = testing::write_temp(
      "causes.yaml", "causes: [{name: GPU, share: 60%}, {name: software, share: 40%, node_out: false}]\n");
  const testing::CommandResult result = testing::run("goodput --plan " + plan + " --runs 0 --json --reliability " + given);
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["failure_causes"].size(), 2u);
  EXPECT_EQ(json["failure_causes"][1]["takes_node_out"], false);
  // A cluster's map applies to its kinds.
  const models::HardwareConfig kind = models::cluster_hardware(models::parse_cluster_yaml(
      "name: c\nnode_groups: [{name: g, hardware: h100-sxm, nodes: 1, gpus_per_node: 8, nvlink_domain: 8, "
      "nic_bandwidth: 50GB/s}]\nreliability: {gpu_mtbf: 1000h}\n",
      "c.yaml"));
  EXPECT_DOUBLE_EQ(kind.reliability.gpu_mtbf_s, 1000 * 3600.0);
}

TEST(Goodput, TheDefaultsGiveLlama3sInterruptionRate) {
  // 16,384 GPUs and 2,048 nodes at the default rates fail 419 times in 54
  // days (the Llama 3 paper's snapshot), whatever the GPU share.
  const models::ReliabilityConfig defaults = models::default_reliability();
  const double mtbf = planner::job_mtbf_s(defaults, 16384, 2048);
  EXPECT_NEAR(54 * 86400 / mtbf, 419, 1e-9);
  // 58.7 % of them GPU issues.
  EXPECT_NEAR(16384 / defaults.gpu_mtbf_s * mtbf, 0.587, 1e-12);
}

TEST(Goodput, ACheckpointWritesEachReplicasShareOnce) {
  // Two pipeline ranks of one GPU's bytes (weights 2 GB and 1 GB, optimizer
  // 6 GB and 3 GB, ZeRO-1: already sharded over d), t = 2, d = 4: each GPU
  // writes its weights / 4 and its optimizer shard.
  planner::CheckpointLayout layout;
  layout.ranks.resize(2);
  layout.ranks[0].weights = 2'000'000'000;
  layout.ranks[0].optimizer = 6'000'000'000;
  layout.ranks[1].weights = 1'000'000'000;
  layout.ranks[1].optimizer = 3'000'000'000;
  layout.tp = 2;
  layout.dp = 4;
  layout.pp = 2;
  layout.zero = models::ZeroStage::kOptimizer;
  models::HardwareConfig hw = models::load_hardware("h100-sxm");
  hw.reliability.storage_write_per_node = 10e9;
  hw.reliability.storage_write_total = 50e9;
  hw.reliability.storage_read_per_node = 20e9;
  hw.reliability.storage_read_total = 1e15;
  const planner::CheckpointCost cost = planner::checkpoint_cost(layout, hw);
  EXPECT_DOUBLE_EQ(cost.write_bytes_per_gpu, 0.5e9 + 6e9);
  // Every GPU (2 x 4 of each rank) once: 8 x (6.5 + 3.25) GB = 78 GB.
  EXPECT_DOUBLE_EQ(cost.state_bytes, 78e9);
  // The slowest node writes 8 x 6.5 GB at 10 GB/s (5.2 s); the storage
  // takes 78 GB at 50 GB/s (1.56 s): the node's.
  EXPECT_DOUBLE_EQ(cost.write_s, 5.2);
  // A restart loads every GPU's whole state: 8 x 8 GB at 20 GB/s.
  EXPECT_DOUBLE_EQ(cost.read_s, 3.2);
  EXPECT_DOUBLE_EQ(cost.snapshot_s,
                   hw.host_link.latency_s + cost.write_bytes_per_gpu / hw.host_link.bandwidth);
  // Without the distributed optimizer the replicas hold the same state.
  layout.zero = models::ZeroStage::kNone;
  EXPECT_DOUBLE_EQ(planner::checkpoint_cost(layout, hw).write_bytes_per_gpu, 0.5e9 + 1.5e9);
}

planner::RunModel three_hour_mtbf(double shape) {
  planner::RunModel model;
  model.work_s = 100 * 3600;  // 100 segments of an hour
  model.interval_s = 3600;
  model.stall_s = 120;
  model.restart_s = 600;
  model.mtbf_s = 3 * 3600;
  model.weibull_shape = shape;
  return model;
}

TEST(Goodput, MonteCarloConvergesToDalysExpectedTime) {
  const planner::RunModel model = three_hour_mtbf(1);
  const planner::RunDistribution runs = planner::simulate_runs(model, 10000, 42, 0);
  const double expected =
      planner::expected_wall_s(model.work_s, model.interval_s, model.stall_s, model.restart_s, model.mtbf_s);
  EXPECT_NEAR(runs.mean_s / expected, 1, 0.01);
  EXPECT_LE(runs.p50_s, runs.p90_s);
  EXPECT_LE(runs.p90_s, runs.p99_s);
  // The failures a run meets: its wall-clock time over the MTBF.
  EXPECT_NEAR(runs.mean_failures / (runs.mean_s / model.mtbf_s), 1, 0.02);
}

TEST(Goodput, MonteCarloIsTheSameOnAnyThreadCount) {
  const planner::RunModel model = three_hour_mtbf(0.7);
  const planner::RunDistribution one = planner::simulate_runs(model, 500, 7, 1);
  const planner::RunDistribution two = planner::simulate_runs(model, 500, 7, 2);
  EXPECT_EQ(one.mean_s, two.mean_s);
  EXPECT_EQ(one.p99_s, two.p99_s);
  EXPECT_NE(planner::simulate_runs(model, 500, 8, 2).mean_s, one.mean_s);
}

TEST(Goodput, ACheckpointWrittenBehindCanBeLost) {
  // Asynchronous: the stall is short, the write runs 30 min behind it; a
  // failure in that window rolls back one more segment. Never faster than
  // the same stall with each checkpoint safe at once, never slower than
  // one that waits for the write.
  planner::RunModel behind = three_hour_mtbf(1);
  behind.stall_s = 10;
  behind.durable_after_s = 1800;
  planner::RunModel at_once = behind;
  at_once.durable_after_s = 0;
  planner::RunModel waiting = at_once;
  waiting.stall_s = 1810;
  const double mean = planner::simulate_runs(behind, 4000, 3, 0).mean_s;
  EXPECT_GT(mean, planner::simulate_runs(at_once, 4000, 3, 0).mean_s);
  EXPECT_LT(mean, planner::simulate_runs(waiting, 4000, 3, 0).mean_s);
  // One that never fails takes its work and stalls exactly.
  behind.mtbf_s = 1e15;
  EXPECT_DOUBLE_EQ(planner::simulate_run(behind, 1).wall_s, 100 * 3600 + 100 * 10);
}

TEST(Goodput, HotSparesAndRepairsPlayOutInTheRuns) {
  const planner::RunModel unlimited = three_hour_mtbf(1);
  const planner::RunDistribution base = planner::simulate_runs(unlimited, 400, 5, 0);
  // Spares never run out and cost nothing to swap: the same runs.
  planner::RunModel plenty = unlimited;
  plenty.spares = 1000;
  plenty.repair_s = 3 * 86400;
  EXPECT_EQ(planner::simulate_runs(plenty, 400, 5, 0).mean_s, base.mean_s);
  // A swap lengthens every restart.
  plenty.swap_s = 600;
  EXPECT_GT(planner::simulate_runs(plenty, 400, 5, 0).mean_s, base.mean_s);
  // No spare: each failure waits for its own node, the whole repair (the
  // job is down meanwhile and cannot fail again).
  planner::RunModel none = plenty;
  none.spares = 0;
  const planner::RunDistribution waiting = planner::simulate_runs(none, 400, 5, 0);
  EXPECT_NEAR(waiting.mean_waiting_s, waiting.mean_failures * none.repair_s, 1e-6 * waiting.mean_waiting_s);
  EXPECT_EQ(waiting.mean_degraded_s, 0);
  // Failures that leave the node in place (software) wait for nothing:
  // the same failure times, the wait shrinks with the share taking a node.
  planner::RunModel software = none;
  software.node_out_share = 0;
  const planner::RunDistribution restarted = planner::simulate_runs(software, 400, 5, 0);
  EXPECT_EQ(restarted.mean_waiting_s, 0);
  software.node_out_share = 0.5;
  const double half = planner::simulate_runs(software, 400, 5, 0).mean_waiting_s;
  EXPECT_GT(half, 0);
  EXPECT_LT(half, waiting.mean_waiting_s);
  // Re-planned at no loss of speed for as many nodes as a run ever
  // misses, a job that restarts on the nodes it has is the job with a
  // spare for every failure.
  planner::RunModel replanned = none;
  replanned.swap_s = 0;
  replanned.replanned_slowdown.assign(200, 1.0);
  const planner::RunDistribution smaller = planner::simulate_runs(replanned, 400, 5, 0);
  EXPECT_EQ(smaller.mean_s, base.mean_s);
  EXPECT_EQ(smaller.mean_waiting_s, 0);
  EXPECT_GT(smaller.mean_degraded_s, 0);
  // Slower on fewer nodes, it takes longer.
  replanned.replanned_slowdown.assign(200, 1.2);
  EXPECT_GT(planner::simulate_runs(replanned, 400, 5, 0).mean_s, base.mean_s);
}

// A 10 s step on 1,024 GPUs (128 nodes), a 60 s save and a 30 s load,
// under the default failure rates.
planner::RunInputs ten_second_steps_on_1024_gpus() {
  planner::RunInputs in;
  in.step_s = 10;
  in.tokens_per_step = 1e6;
  in.gpus = 1024;
  in.nodes = 128;
  in.checkpoint.write_s = 60;
  in.checkpoint.read_s = 30;
  in.reliability = models::default_reliability();
  return in;
}

TEST(Goodput, ExpectedTriesAreOneOverTheSurvival) {
  // Exponential: a try of x survives with e^(-x/M).
  EXPECT_NEAR(planner::expected_tries(3600, 10800, 1), std::exp(1.0 / 3), 1e-12);
  // Weibull of shape 2 and mean M: scale M / Gamma(1.5) = 2M / sqrt(pi),
  // survival e^(-(x / scale)^2). x = M: e^(pi / 4).
  EXPECT_NEAR(planner::expected_tries(10800, 10800, 2), std::exp(std::acos(-1.0) / 4), 1e-12);
  EXPECT_FALSE(std::isfinite(planner::expected_tries(1e6, 1, 1)));
  EXPECT_EQ(planner::format_tries(planner::expected_tries(1e6, 1, 1)), "more than 10^308");
}

TEST(Goodput, RunsThatCannotProgressAreRefusedBeforeTheyStart) {
  // Each would loop for ever: a restart a thousand times the MTBF, a save
  // as long, a shape whose scale is 0.
  planner::RunModel restart = three_hour_mtbf(1);
  restart.restart_s = 1000 * restart.mtbf_s;
  EXPECT_THROW(planner::simulate_runs(restart, 10, 1, 1), InputError);
  EXPECT_THROW(planner::simulate_run(restart, 1), InputError);
  planner::RunModel save = three_hour_mtbf(1);
  save.stall_s = 1000 * save.mtbf_s;
  EXPECT_THROW(planner::simulate_runs(save, 10, 1, 1), InputError);
  EXPECT_THROW(planner::simulate_runs(three_hour_mtbf(1e-300), 10, 1, 1), InputError);
  EXPECT_THROW(planner::simulate_runs(three_hour_mtbf(21), 10, 1, 1), InputError);
  // Progressing runs, but too many failures in all to play out: 100 h of
  // work at a 3 h MTBF meets about 40 failures a run.
  const planner::RunModel fine = three_hour_mtbf(1);
  EXPECT_NO_THROW(planner::simulate_runs(fine, 10, 1, 1));
  EXPECT_THROW(planner::simulate_runs(fine, 10'000'000, 1, 1), InputError);
}

TEST(Goodput, TheClosedFormRefusesAJobThatCannotProgress) {
  planner::RunInputs in = ten_second_steps_on_1024_gpus();
  const double mtbf = planner::job_mtbf_s(in.reliability, in.gpus, in.nodes);
  // Restarts of 20 MTBFs: e^20 = 4.9e8 tries each, never "0 % goodput".
  planner::RunInputs slow_restart = in;
  slow_restart.reliability.relaunch_s = 20 * mtbf;
  try {
    planner::estimate_goodput(slow_restart);
    ADD_FAILURE() << "a restart of 20 MTBFs was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("reliability.relaunch"), std::string::npos) << error.what();
  }
  // At 13 MTBFs (e^13 = 4.4e5 tries) the job still progresses, slowly.
  slow_restart.reliability.relaunch_s = 13 * mtbf;
  const planner::GoodputEstimate slow = planner::estimate_goodput(slow_restart);
  EXPECT_GT(slow.goodput, 0);
  EXPECT_TRUE(std::isfinite(slow.lost_per_failure_s));
  // A save of 20 MTBFs: no interval runs through.
  planner::RunInputs slow_save = in;
  slow_save.checkpoint.write_s = 20 * mtbf;
  EXPECT_THROW(planner::estimate_goodput(slow_save), InputError);
  // An interval the user chose too long is named as such.
  planner::RunInputs long_interval = in;
  long_interval.interval_steps = static_cast<int>(20 * mtbf / in.step_s);
  try {
    planner::estimate_goodput(long_interval);
    ADD_FAILURE() << "an interval of 20 MTBFs was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--interval-steps"), std::string::npos) << error.what();
  }
}

TEST(Goodput, TheIntervalIsInWholeStepsAndNoShorterThanTheSave) {
  planner::RunInputs in = ten_second_steps_on_1024_gpus();
  const planner::GoodputEstimate estimate = planner::estimate_goodput(in);
  EXPECT_DOUBLE_EQ(estimate.interval_s, estimate.interval_steps * 10.0);
  EXPECT_LE(std::abs(estimate.interval_s - estimate.daly_s), 10);
  EXPECT_DOUBLE_EQ(estimate.restart_s, 300 + 60 + 30 + 10);
  in.interval_steps = 5;  // 50 s of training against a 60 s save
  EXPECT_THROW(planner::estimate_goodput(in), InputError);
  in.interval_steps.reset();
  in.tokens = 1e5;  // below one step
  EXPECT_THROW(planner::estimate_goodput(in), InputError);
}

TEST(Goodput, TheCommandRefusesBadInputInOneLine) {
  const std::string plan = testing::kData + "/llama3-8b-64-h100.plan.yaml";
  const std::string zero_mtbf = testing::write_temp("zero_mtbf.yaml", "gpu_mtbf: 0h\n");
  testing::expect_refused("goodput --plan " + plan + " --reliability " + zero_mtbf, "reliability.gpu_mtbf");
  const std::string no_storage = testing::write_temp("no_storage.yaml", "storage_write_total: 0GB/s\n");
  testing::expect_refused("goodput --plan " + plan + " --reliability " + no_storage, "storage_write_total");
  const std::string unitless = testing::write_temp("unitless.yaml", "node_mtbf: 5000\n");
  testing::expect_refused("goodput --plan " + plan + " --reliability " + unitless, "needs a unit");
  testing::expect_refused("goodput --plan " + plan + " --tokens 1000", "--tokens");
  testing::expect_refused("goodput --plan " + plan + " --async --interval-steps 1 --reliability " +
                              testing::write_temp("slow_storage.yaml", "storage_write_total: 1GB/s\n"),
                          "--interval");
  testing::expect_refused("goodput --plan " + plan + " --weibull-shape 0", "--weibull-shape");
  testing::expect_refused("goodput --plan " + plan + " --weibull-shape 1e-300", "--weibull-shape");
  testing::expect_refused("goodput --plan " + plan + " --tokens 0", "--tokens");
  // Options only the Monte Carlo runs read, with none asked for.
  for (const std::string option : {"--seed 3", "--weibull-shape 0.7", "--run-length 10d"}) {
    const std::string name = option.substr(0, option.find(' '));
    testing::expect_refused("goodput --plan " + plan + " --runs 0 " + option, name + ": only the Monte Carlo runs");
  }
  // Inputs under which the job cannot progress (these used to hang).
  const std::string one_second = testing::write_temp("one_second.yaml", "gpu_mtbf: 1s\n");
  testing::expect_refused("goodput --plan " + plan + " --reliability " + one_second, "cannot progress");
  const std::string no_relaunch = testing::write_temp("no_relaunch.yaml", "relaunch: 1000y\n");
  testing::expect_refused("goodput --plan " + plan + " --reliability " + no_relaunch, "reliability.relaunch");
  testing::expect_refused("goodput --plan " + plan + " --run-length 1000y --runs 10000000", "--runs");
  testing::expect_refused("goodput --plan " + plan + " --swap 10min", "--swap: only with --spares");
  testing::expect_refused("goodput --plan " + plan + " --spares 4", "--spares: give --repair");
  testing::expect_refused("goodput --plan " + plan + " --spares 4 --repair 0d", "--repair");
}

TEST(Goodput, TheCommandReportsTheRun) {
  const std::string plan = testing::kData + "/llama3-8b-64-h100.plan.yaml";
  const testing::CommandResult result = testing::run("goodput --plan " + plan + " --tokens 1T --runs 200 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_GT(json["goodput"].get<double>(), 0.9);
  EXPECT_LT(json["goodput"].get<double>(), 1);
  // The expected time and the runs' mean agree with the closed form's.
  EXPECT_NEAR(json["monte_carlo"]["mean_s"].get<double>() / json["expected_wall_s"].get<double>(), 1, 0.01);
  EXPECT_GE(json["expected_wall_s"].get<double>(), json["work_s"].get<double>());
}

TEST(Goodput, TheGoodputObjectivePrefersLessToReloadWhenStorageIsSlow) {
  // Llama 3.1 405B on 16,384 H100s with 100 GB/s of checkpoint storage: a
  // restart reloads every replica's weights, so fewer replicas restart
  // sooner. The fastest step is not the plan that trains most.
  planner::PlanRequest request;
  request.model = models::load_model("llama3.1-405b");
  request.hardware = models::load_hardware("h100-sxm");
  request.hardware.reliability.storage_write_total = request.hardware.reliability.storage_read_total = 100e9;
  request.gpus = 16384;
  request.global_batch = 2048;
  request.seq_len = 8192;
  const planner::PlanSearchResult fastest = planner::search_plans(request, 1);
  request.objective = planner::Objective::kGoodput;
  const planner::PlanSearchResult by_goodput = planner::search_plans(request, 40);
  ASSERT_FALSE(fastest.ranked.empty());
  ASSERT_FALSE(by_goodput.ranked.empty());
  const planner::PlanCandidate& best = by_goodput.ranked.front();
  const planner::PlanCandidate& quickest = fastest.ranked.front();
  EXPECT_GT(quickest.tokens_per_s, best.tokens_per_s);
  EXPECT_LT(best.dp, quickest.dp);
  // The fastest plan is among those the goodput search ranked, below.
  const auto same = [&](const planner::PlanCandidate& c) {
    return c.tp == quickest.tp && c.cp == quickest.cp && c.pp == quickest.pp && c.schedule == quickest.schedule &&
           c.recompute == quickest.recompute && c.micro_batch_size == quickest.micro_batch_size;
  };
  const auto found = std::find_if(by_goodput.ranked.begin(), by_goodput.ranked.end(), same);
  ASSERT_NE(found, by_goodput.ranked.end());
  EXPECT_GT(best.effective_tokens_per_s, found->effective_tokens_per_s);
  EXPECT_DOUBLE_EQ(found->tokens_per_s, quickest.tokens_per_s);
}

}  // namespace
}  // namespace pipeplan
