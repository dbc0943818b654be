// Pipelines over several GPU kinds (planner/mixed/mixed_pipeline.h,
// planner/mixed/mixed_search.h): one kind split in two costs what the
// homogeneous simulation does, a pool of one kind plans as the homogeneous
// search does, a mixed pool plans no slower than its best kind alone, the
// split of an H100 and an A100 stage is the brute-force optimum, and the
// link between kinds is the slower port's.
#include "planner/mixed/mixed_pipeline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "models/cluster.h"
#include "models/layers.h"
#include "planner/mixed/mixed_search.h"
#include "planner/plan_file.h"
#include "planner/search/plan_search.h"
#include "step/layer_table.h"
#include "step/model_simulation.h"
#include "tests/support/cli_support.h"
#include "tests/support/plan_request_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::planner {
namespace {

// One node of each kind under one switch: 400 Gb/s per H100, 200 per A100.
constexpr const char* kPair = R"(name: pair
node_groups:
  - {name: h100, hardware: h100-sxm, nodes: 1, gpus_per_node: 8, nvlink_domain: 8, nic_bandwidth: 400Gb/s}
  - {name: a100, hardware: a100-80gb, nodes: 1, gpus_per_node: 8, nvlink_domain: 8, nic_bandwidth: 200Gb/s}
network:
  - {tier: leaf, latency: 1us}
)";

// Two H100 nodes under one switch.
constexpr const char* kTwoH100 = R"(name: two-h100
node_groups:
  - {name: first, hardware: h100-sxm, nodes: 1, gpus_per_node: 8, nvlink_domain: 8, nic_bandwidth: 400Gb/s}
  - {name: second, hardware: h100-sxm, nodes: 1, gpus_per_node: 8, nvlink_domain: 8, nic_bandwidth: 400Gb/s}
network:
  - {tier: leaf, latency: 1us}
)";

PlanRequest request_on(const models::ClusterConfig& cluster, const std::string& model, int global_batch, int seq) {
  PlanRequest request = testing::plan_request(model, "h100-sxm", cluster.gpus(), global_batch, seq);
  request.hardware = models::cluster_hardware(models::cluster_kind(cluster, cluster.groups.front().hardware.name));
  request.threads = 1;
  return request;
}

TEST(MixedPipeline, OneKindSplitInTwoCostsWhatTheHomogeneousSimulationDoes) {
  const models::ClusterConfig cluster = models::parse_cluster_yaml(kTwoH100, "two-h100");
  const models::HardwareConfig whole = models::cluster_hardware(cluster);
  // Each node as a pool of its own: the same kind, costed apart.
  std::vector<KindPool> pools;
  for (int node = 0; node < 2; ++node) {
    models::ClusterConfig part = cluster;
    part.groups = {cluster.groups[static_cast<std::size_t>(node)]};
    pools.push_back({"h100-sxm", models::cluster_hardware(part), {node}});
  }
  PlanCandidate candidate;
  candidate.tp = 2;
  candidate.pp = 4;
  candidate.dp = 2;
  candidate.sequence_parallel = true;
  candidate.zero = models::ZeroStage::kOptimizer;
  candidate.recompute = models::Recompute::kSelective;
  step::PipelineSetup setup;
  setup.shape = models::shape_of(candidate, 4096);
  setup.pp = 4;
  setup.microbatches = 8;
  setup.schedule = "1F1B";
  setup.split = step::even_split(32, 4);
  const models::ModelConfig model = models::load_model("llama3-8b");
  const step::ModelSimulation homogeneous = step::simulate_model(model, whole, setup);
  // Two stages on each node: t x d = 4 GPUs a stage, as Megatron's order places them.
  const MixedPipeline pipeline{{{0, 2, 2}, {1, 2, 2}}};
  const step::ModelSimulation mixed = simulate_mixed(model, pools, cluster.tiers, pipeline, setup);
  EXPECT_DOUBLE_EQ(mixed.pipeline_s, homogeneous.pipeline_s);
  EXPECT_DOUBLE_EQ(mixed.gradient_sync_s, homogeneous.gradient_sync_s);
  EXPECT_DOUBLE_EQ(mixed.optimizer_step_s, homogeneous.optimizer_step_s);
  EXPECT_DOUBLE_EQ(mixed.iteration_time_s, homogeneous.iteration_time_s);
  EXPECT_DOUBLE_EQ(mixed.tokens_per_s, homogeneous.tokens_per_s);
  EXPECT_NEAR(mixed.mfu, homogeneous.mfu, 1e-12);
  EXPECT_EQ(mixed.gpus, homogeneous.gpus);
  ASSERT_EQ(mixed.memory.size(), homogeneous.memory.size());
  for (std::size_t rank = 0; rank < mixed.memory.size(); ++rank) {
    EXPECT_EQ(mixed.memory[rank].total(), homogeneous.memory[rank].total()) << rank;
  }
  EXPECT_EQ(mixed.layers, homogeneous.layers);
  // One limit for all: the kinds' usable memory is the same.
  EXPECT_TRUE(mixed.report.rank_memory_limit_bytes.empty());
  EXPECT_EQ(mixed.report.memory_limit_bytes, homogeneous.report.memory_limit_bytes);
}

TEST(MixedPipeline, APoolOfOneKindPlansAsTheHomogeneousSearch) {
  const models::ClusterConfig cluster = models::parse_cluster_yaml(kTwoH100, "two-h100");
  const PlanRequest request = request_on(cluster, "llama3-8b", 32, 2048);
  const MixedSearchResult mixed = search_mixed_plans(request, cluster, 3);
  EXPECT_EQ(mixed.pools.size(), 1u);
  EXPECT_EQ(mixed.layouts, 0u);  // no second kind to place stages on
  ASSERT_TRUE(mixed.best_alone.has_value());
  PlanRequest homogeneous = request;
  homogeneous.hardware = models::cluster_hardware(cluster);
  const PlanSearchResult expected = search_plans(homogeneous, 3);
  const PlanSearchResult& got = *mixed.alone[*mixed.best_alone].result;
  ASSERT_EQ(got.ranked.size(), expected.ranked.size());
  for (std::size_t i = 0; i < got.ranked.size(); ++i) {
    const PlanCandidate& a = got.ranked[i];
    const PlanCandidate& b = expected.ranked[i];
    EXPECT_EQ(std::tie(a.tp, a.pp, a.dp, a.micro_batch_size, a.virtual_stages, a.schedule),
              std::tie(b.tp, b.pp, b.dp, b.micro_batch_size, b.virtual_stages, b.schedule));
    EXPECT_EQ(a.split, b.split);
    EXPECT_DOUBLE_EQ(a.iteration_time_s, b.iteration_time_s);
    EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  }
  EXPECT_DOUBLE_EQ(mixed.best_time_s(), expected.ranked.front().iteration_time_s);
}

TEST(MixedPipeline, AMixedPoolPlansNoSlowerThanItsBestKindAlone) {
  const models::ClusterConfig cluster = models::load_cluster("mixed-h100-a100");
  const PlanRequest request = request_on(cluster, "llama3-8b", 128, 4096);
  const MixedSearchResult result = search_mixed_plans(request, cluster, 3);
  ASSERT_EQ(result.pools.size(), 2u);
  ASSERT_TRUE(result.found());
  for (const KindSearch& alone : result.alone) {
    ASSERT_TRUE(alone.result.has_value()) << alone.refused;
    EXPECT_LE(result.best_time_s(), alone.result->ranked.front().iteration_time_s) << result.pools[alone.pool].kind;
  }
  ASSERT_FALSE(result.ranked.empty());
  // Ranked fastest first, every rank under its own kind's usable memory,
  // every kind's GPUs used whole.
  for (std::size_t i = 0; i < result.ranked.size(); ++i) {
    const MixedPlan& plan = result.ranked[i];
    if (i > 0) {
      EXPECT_LE(result.ranked[i - 1].plan.iteration_time_s, plan.plan.iteration_time_s);
    }
    int rank = 0;
    std::vector<int> used(result.pools.size(), 0);
    for (const KindSegment& segment : plan.pipeline.segments) {
      used[segment.pool] += segment.stages * segment.tp * plan.plan.dp;
      for (int stage = 0; stage < segment.stages; ++stage, ++rank) {
        EXPECT_LE(plan.plan.peak_memory_bytes[static_cast<std::size_t>(rank)],
                  result.pools[segment.pool].hardware.gpu.usable_memory_bytes());
      }
    }
    for (std::size_t pool = 0; pool < result.pools.size(); ++pool) {
      EXPECT_TRUE(used[pool] == 0 || used[pool] == result.pools[pool].gpus()) << pool;
    }
  }
}

TEST(MixedPipeline, PruningChangesNothing) {
  const models::ClusterConfig cluster = models::parse_cluster_yaml(kPair, "pair");
  PlanRequest request = request_on(cluster, "llama3-8b", 32, 4096);
  const MixedSearchResult pruned = search_mixed_plans(request, cluster, 4);
  request.prune = false;
  const MixedSearchResult full = search_mixed_plans(request, cluster, 4);
  EXPECT_GT(pruned.pruned, 0u);
  EXPECT_EQ(full.pruned, 0u);
  EXPECT_GT(full.evaluated, pruned.evaluated);
  ASSERT_EQ(pruned.ranked.size(), full.ranked.size());
  for (std::size_t i = 0; i < full.ranked.size(); ++i) {
    EXPECT_EQ(pruned.ranked[i].pipeline, full.ranked[i].pipeline) << i;
    EXPECT_EQ(pruned.ranked[i].plan.schedule, full.ranked[i].plan.schedule) << i;
    EXPECT_EQ(pruned.ranked[i].plan.split, full.ranked[i].plan.split) << i;
    EXPECT_DOUBLE_EQ(pruned.ranked[i].plan.iteration_time_s, full.ranked[i].plan.iteration_time_s) << i;
  }
}

TEST(MixedPipeline, TheSplitOfAnH100AndAnA100StageIsTheBruteForceOptimum) {
  const models::ClusterConfig cluster = models::parse_cluster_yaml(kPair, "pair");
  PlanRequest request = request_on(cluster, "llama3-8b", 8, 4096);
  request.tp = 8;
  request.pp = 2;
  request.micro_batch_size = 1;
  request.schedule = "1F1B";
  request.recompute = models::Recompute::kNone;
  request.partition = step::PartitionMethod::kTime;
  const MixedSearchResult result = search_mixed_plans(request, cluster, 2);
  ASSERT_EQ(result.ranked.size(), 2u);  // H100 first, or A100 first
  for (const MixedPlan& plan : result.ranked) {
    ASSERT_EQ(plan.pipeline.segments.size(), 2u);
    // Each stage's layers timed on its own kind, as an independent table.
    std::vector<step::LayerTable> tables;
    for (const KindSegment& segment : plan.pipeline.segments) {
      models::TrainingShape shape = models::shape_of(plan.plan, 4096);
      shape.tp = segment.tp;
      tables.emplace_back(models::expand_layers(request.model, shape), result.pools[segment.pool].hardware, shape);
    }
    const int n = tables.front().size();
    double best = std::numeric_limits<double>::infinity();
    int best_cut = 0;
    // Every stage holds a block: the cut leaves the embedding and a block first, a block and the output last.
    for (int cut = 2; cut <= n - 2; ++cut) {
      const double slowest = std::max(tables[0].stage_time_s(0, cut), tables[1].stage_time_s(cut, n));
      if (slowest < best) {
        best = slowest;
        best_cut = cut;
      }
    }
    const int cut = plan.plan.split.end_layer(0);
    EXPECT_DOUBLE_EQ(std::max(tables[0].stage_time_s(0, cut), tables[1].stage_time_s(cut, n)), best);
    EXPECT_LE(std::abs(cut - best_cut), 1);
    // The faster kind takes more blocks, in the ratio of the two kinds'
    // block times: the stages differ by less than one block and the edges.
    const double h100 = tables[plan.pipeline.segments[0].pool == 0 ? 0 : 1].stage_time_s(5, 6);
    const double a100 = tables[plan.pipeline.segments[0].pool == 0 ? 1 : 0].stage_time_s(5, 6);
    ASSERT_LT(h100, a100);
    const std::vector<int> counts = plan.plan.split.transformer_layer_counts();
    const int on_h100 = counts[plan.pipeline.segments[0].pool == 0 ? 0 : 1];
    const int on_a100 = 32 - on_h100;
    EXPECT_NEAR(on_h100 / static_cast<double>(on_a100), a100 / h100, 0.5) << on_h100 << " vs " << on_a100;
  }
}

TEST(MixedPipeline, TheLinkBetweenKindsIsTheSlowerPort) {
  const models::ClusterConfig cluster = models::parse_cluster_yaml(kPair, "pair");
  const std::vector<KindPool> pools = kind_pools(cluster);
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].kind, "h100-sxm");
  EXPECT_EQ(pools[1].nodes, std::vector<int>{1});
  // Two stages of t 4 on each kind, d 1: H100 ranks 0-1 share node 0, A100 ranks 2-3 node 1.
  const MixedPipeline pipeline{{{0, 2, 4}, {1, 2, 4}}};
  const sim::Topology topology = mixed_topology(pipeline, pools, cluster.tiers, 1);
  ASSERT_EQ(topology.ports.size(), 4u);
  EXPECT_TRUE(topology.same_node(0, 1));
  EXPECT_FALSE(topology.same_node(1, 2));
  EXPECT_DOUBLE_EQ(topology.spec(0, 1).bandwidth_bytes_per_s, pools[0].hardware.node_link.bandwidth);
  EXPECT_DOUBLE_EQ(topology.spec(2, 3).bandwidth_bytes_per_s, pools[1].hardware.node_link.bandwidth);
  // Across kinds: the A100's 200 Gb/s NIC and the leaf's 1 us, whichever way.
  EXPECT_DOUBLE_EQ(topology.spec(1, 2).bandwidth_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(topology.spec(2, 1).bandwidth_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(topology.spec(1, 2).latency_s, 1e-6);
  // A pool short of GPUs is named.
  try {
    check_pool_gpus({{{0, 3, 4}}}, pools, 1);
    ADD_FAILURE() << "12 GPUs of 8 accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("the plan needs 12 GPUs of h100-sxm"), std::string::npos)
        << error.what();
  }
}

TEST(MixedPipeline, PlanReportsAMixedPoolAndRefusesWhatItCannotTake) {
  const testing::CommandResult planned =
      testing::run("plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 128 --seq 4096 --json");
  ASSERT_EQ(planned.code, 0) << planned.err;
  const nlohmann::json json = nlohmann::json::parse(planned.out);
  ASSERT_EQ(json["kinds"].size(), 2u);
  EXPECT_EQ(json["kinds"][1]["kind"], "a100-80gb");
  EXPECT_TRUE(json["best"].contains("over_kinds"));
  EXPECT_GT(json["over_kinds"]["layouts"].get<int>(), 0);
  testing::expect_refused("plan --model llama3-8b --hardware mixed-h100-a100 --gpus 32 --global-batch 16",
                          "--gpus 32: cluster mixed-h100-a100 mixes GPU kinds (32 h100-sxm, 32 a100-80gb)");
  // Options of a single kind's search are refused over kinds, not ignored.
  testing::expect_refused(
      "plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 16 --framework megatron-lm",
      "--framework megatron-lm: the search over mixed-h100-a100's GPU kinds is not kept to a framework");
  testing::expect_refused("plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 16 --pareto 3",
                          "--pareto bounds a single kind's Pareto front");
  testing::expect_refused("plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 16 --cp 2",
                          "--cp above 1 is not built for clusters of several GPU kinds");
  testing::expect_refused("plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 16 --tp 8 --pp 16",
                          "--tp 8 x --pp 16 take 128 GPUs, more than mixed-h100-a100 has");
  testing::expect_refused("simulate --model llama3-8b --hardware mixed-h100-a100:b200 --pp 2",
                          "cluster mixed-h100-a100 has no nodes of kind 'b200': name one of its kinds after the colon "
                          "(h100-sxm, a100-80gb)");
  // Kinds answer to their aliases, as hardware names do.
  const testing::CommandResult alias = testing::run("simulate --model llama3-8b --hardware mixed-h100-a100:H100 --pp 4 --tp 8");
  EXPECT_EQ(alias.code, 0) << alias.err;
}

TEST(MixedPipeline, AKindAloneBestIsWrittenAsThatKindsNodesAndReplays) {
  // A small batch: the A100s' stages cost more than they give.
  const std::string plan = testing::temp_path("mixed_alone_plan.yaml");
  const testing::CommandResult planned = testing::run(
      "plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 16 --seq 2048 --json --out " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const nlohmann::json json = nlohmann::json::parse(planned.out);
  ASSERT_FALSE(json["best"]["over_kinds"].get<bool>());
  EXPECT_EQ(json["best"]["plan"]["hardware"], "mixed-h100-a100:h100-sxm");
  const testing::CommandResult replayed = testing::run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(replayed.out)["iteration_time_s"].get<double>(),
                   json["best"]["plan"]["best"]["iteration_time_s"].get<double>());
}

}  // namespace
}  // namespace pipeplan::planner

namespace pipeplan::planner {
namespace {

TEST(MixedPipeline, APlanOverKindsRoundTripsThroughItsFile) {
  const std::string plan = testing::temp_path("mixed_plan.yaml");
  const testing::CommandResult planned = testing::run(
      "plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 128 --seq 4096 --json --out " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const nlohmann::json best = nlohmann::json::parse(planned.out)["best"];
  ASSERT_TRUE(best["over_kinds"].get<bool>());
  const PlanFile file = read_plan_yaml(plan);
  ASSERT_EQ(file.segments.size(), best["segments"].size());
  EXPECT_EQ(file.segments.front().kind, best["segments"][0]["kind"]);
  EXPECT_EQ(file.gpus(), 64);
  const testing::CommandResult replayed = testing::run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  const nlohmann::json replay = nlohmann::json::parse(replayed.out);
  EXPECT_DOUBLE_EQ(replay["iteration_time_s"].get<double>(), best["plan"]["iteration_time_s"].get<double>());
  EXPECT_FALSE(replay.contains("notes"));  // the file's own prediction comes back
  EXPECT_EQ(replay["segments"].size(), file.segments.size());
  // Written again, the file reads the same.
  EXPECT_EQ(read_plan_yaml(testing::write_temp("mixed_plan_again.yaml", write_plan_yaml(file))).segments,
            file.segments);
  testing::expect_refused("simulate --plan " + plan + " --tp 2", "--tp: a plan over several GPU kinds replays as written");
  testing::expect_refused("simulate --plan " + plan + " --explain", "--explain divides one kind's step");
}

TEST(MixedPipeline, APlanFilesSegmentsAreCheckedAtTheirLine) {
  const std::string head = R"(model: llama3-8b
hardware: mixed-h100-a100
global_batch: 64
seq: 4096
tp: 1
pp: 8
dp: 8
micro_batch_size: 1
microbatches: 8
schedule: 1F1B
virtual: 1
recompute: none
sequence_parallel: true
zero: 1
layout: "Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L"
)";
  const auto refused = [&](const std::string& name, const std::string& tail, const std::string& expected) {
    const std::string path = testing::write_temp(name, head + tail);
    try {
      read_plan_yaml(path);
      ADD_FAILURE() << tail << " accepted";
    } catch (const ParseError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  refused("segments_sum.yaml", "gpus: 64\nsegments: [{kind: h100-sxm, stages: 4, tp: 1}, {kind: a100-80gb, stages: 3, tp: 1}]\n",
          "the segments' stages add up to 7 and 'pp' is 8");
  refused("segments_tp.yaml", "gpus: 96\nsegments: [{kind: h100-sxm, stages: 4, tp: 2}, {kind: a100-80gb, stages: 4, tp: 1}]\n",
          "the first segment's tp is 2 and 'tp' is 1");
  refused("segments_gpus.yaml", "gpus: 63\nsegments: [{kind: h100-sxm, stages: 4, tp: 1}, {kind: a100-80gb, stages: 4, tp: 1}]\n",
          "'gpus' must equal the segments' stages x tp");
  refused("segments_key.yaml", "gpus: 64\nsegments: [{kind: h100-sxm, stages: 4, tp: 1, pp: 2}, {kind: a100-80gb, stages: 4, tp: 1}]\n",
          "pp");
  refused("segments_no_tp.yaml", "gpus: 64\nsegments: [{kind: h100-sxm, stages: 4}, {kind: a100-80gb, stages: 4, tp: 1}]\n",
          "a segment has no 'tp'");
  const std::string unknown = testing::write_temp(
      "segments_kind.yaml", head + "gpus: 64\nsegments: [{kind: h100-sxm, stages: 4, tp: 1}, {kind: b200, stages: 4, tp: 1}]\n");
  testing::expect_refused("simulate --plan " + unknown,
                          "segment 2 of 'segments' names b200, and cluster mixed-h100-a100 has no such kind: use one of");
}

}  // namespace
}  // namespace pipeplan::planner

namespace pipeplan::planner {
namespace {

TEST(MixedPipeline, BackwardMessagesCarryTheGradientAtTheirBoundary) {
  // The last stage's input gradients go back as large as the activations
  // came (its own boundary, after the output layer, carries nothing).
  const std::string trace = testing::temp_path("boundary_trace.json");
  const testing::CommandResult run = testing::run(
      "simulate --model llama3-8b --hardware h100-sxm --pp 2 --microbatches 2 --seq 4096 --trace " + trace);
  ASSERT_EQ(run.code, 0) << run.err;
  std::ifstream in(trace);
  const nlohmann::json events = nlohmann::json::parse(in)["traceEvents"];
  std::map<std::string, std::int64_t> bytes;
  for (const nlohmann::json& event : events) {
    if (event.contains("args") && event["args"].contains("bytes")) {
      bytes[event["name"].get<std::string>()] = event["args"]["bytes"].get<std::int64_t>();
    }
  }
  // b x s x h bf16: 1 x 4096 x 4096 x 2 bytes.
  EXPECT_EQ(bytes.at("0SEND_F0"), 4096LL * 4096 * 2);
  EXPECT_EQ(bytes.at("1SEND_B0"), 4096LL * 4096 * 2);
}

TEST(MixedPipeline, ReplaysAndSearchesHonourEveryKindsCapAndFlags) {
  const std::string plan = testing::temp_path("mixed_cap_plan.yaml");
  const testing::CommandResult planned = testing::run(
      "plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 128 --seq 4096 --memory-cap 60GiB "
      "--tp 2 --tp-comm-overlap --json --out " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const nlohmann::json best = nlohmann::json::parse(planned.out)["best"];
  ASSERT_TRUE(best["over_kinds"].get<bool>());
  EXPECT_TRUE(best["plan"]["tp_comm_overlap"].get<bool>());
  // The plan's cap comes back with it; a cap above a kind's memory is refused.
  const testing::CommandResult replayed = testing::run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  const nlohmann::json replay = nlohmann::json::parse(replayed.out);
  EXPECT_EQ(replay["memory_limit_bytes"].get<std::int64_t>(), 60LL << 30);
  EXPECT_DOUBLE_EQ(replay["iteration_time_s"].get<double>(), best["plan"]["iteration_time_s"].get<double>());
  testing::expect_refused("simulate --plan " + plan + " --memory-cap 100GiB", "--memory-cap 100GiB is more than");
  testing::expect_refused("simulate --plan " + plan + " --offload", "--offload: a plan over several GPU kinds");
  // A given split fixes the stage count over kinds too.
  const testing::CommandResult split = testing::run(
      "plan --model llama3-8b --hardware mixed-h100-a100 --gpus 64 --global-batch 128 --seq 4096 --layers "
      "4,4,4,4,4,4,4,4 --json");
  ASSERT_EQ(split.code, 0) << split.err;
  const nlohmann::json rows = nlohmann::json::parse(split.out)["over_kinds"]["top"];
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row["stage_layers"], nlohmann::json::parse("[4,4,4,4,4,4,4,4]"));
  }
}

TEST(MixedPipeline, TwoDescriptionsUnderOneNameAreRefused) {
  const std::string small = testing::write_temp("h100-40.yaml", R"(name: h100-sxm
base: h100-sxm
gpu: {memory: 40GiB}
)");
  const std::string cluster = testing::write_temp("same-name.yaml", "name: same\nnode_groups:\n"
      "  - {name: big, hardware: h100-sxm, nodes: 1}\n  - {name: small, hardware: " + small + ", nodes: 1}\n"
      "network:\n  - {tier: leaf, latency: 1us}\n");
  try {
    models::load_cluster(cluster);
    ADD_FAILURE() << "two h100-sxm descriptions accepted";
  } catch (const ParseError& error) {
    EXPECT_NE(std::string(error.what()).find("node_groups[1].hardware: a description named h100-sxm that differs"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace pipeplan::planner
