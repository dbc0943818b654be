// Cluster descriptions (models/cluster.h): the built-in files as their
// sources give them, and bad files refused at the field with one line.
#include "models/cluster.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/error.h"
#include "tests/support/cli_support.h"

namespace pipeplan::models {
namespace {

TEST(Cluster, BuiltInsReadAsTheirSourcesGiveThem) {
  const std::vector<std::string> names = builtin_cluster_names();
  EXPECT_EQ(names.size(), 4u);
  // DGX SuperPOD (DGX H100): four scalable units of 32 nodes, 127 nodes.
  const ClusterConfig superpod = load_cluster("dgx-h100-superpod");
  EXPECT_EQ(superpod.nodes(), 127);
  EXPECT_EQ(superpod.gpus(), 1016);
  EXPECT_TRUE(superpod.homogeneous());
  ASSERT_EQ(superpod.tiers.size(), 2u);
  EXPECT_EQ(superpod.tiers[0].nodes, 32);
  EXPECT_DOUBLE_EQ(superpod.groups[0].nic_bandwidth, 50e9);  // 400 Gb/s
  // GB200 NVL72: 18 trays of 4 GPUs, one NVLink domain of 72.
  const ClusterConfig rack = load_cluster("gb200-nvl72");
  EXPECT_EQ(rack.gpus(), 72);
  EXPECT_EQ(rack.groups[0].nvlink_domain, 72);
  EXPECT_EQ(rack.groups[0].gpus_per_node, 4);
  const ClusterConfig mixed = load_cluster("mixed-h100-a100");
  EXPECT_FALSE(mixed.homogeneous());
  EXPECT_EQ(mixed.groups[1].hardware.name, "a100-80gb");
  EXPECT_DOUBLE_EQ(mixed.tiers[1].oversubscription, 2);
  const ClusterConfig pcie = load_cluster("l40s-pcie-pool");
  EXPECT_EQ(pcie.groups[0].nvlink_domain, 1);
  // Names read in any case and punctuation, as hardware names are.
  EXPECT_EQ(load_cluster("GB200_NVL72").name, "gb200-nvl72");
  EXPECT_TRUE(is_cluster_description("Mixed-H100-A100"));
  EXPECT_THROW(load_cluster("gb200-nvl"), InputError);
}

std::string refusal(const std::string& yaml) {
  try {
    parse_cluster_yaml(yaml, "bad.yaml");
  } catch (const ParseError& error) {
    return error.what();
  }
  return "read without error";
}

TEST(Cluster, BadFilesNameTheField) {
  const std::string groups = "node_groups:\n  - {hardware: h100-sxm, nodes: 4}\n";
  EXPECT_NE(refusal("node_groups:\n  - {hardware: h900, nodes: 4}\nnetwork:\n  - {tier: leaf}\n")
                .find("node_groups[0].hardware: unknown hardware 'h900'"),
            std::string::npos);
  EXPECT_NE(refusal("node_groups:\n  - {hardware: h100-sxm, nodes: 4, nvlink_domain: 3}\nnetwork:\n  - {tier: leaf}\n")
                .find("nvlink_domain 3 neither divides"),
            std::string::npos);
  EXPECT_NE(refusal(groups + "network:\n  - {tier: spine, oversubscription: 0.5}\n").find("below 1"), std::string::npos);
  // 1e300 once made a 300-digit step time.
  EXPECT_NE(refusal(groups + "network:\n  - {tier: spine, oversubscription: 1e300, latency: 1us}\n").find("is over 1000"),
            std::string::npos);
  EXPECT_NE(refusal(groups + "network:\n  - {tier: leaf, nodes: 2, latency: 1us}\n  - {tier: spine, nodes: 2, latency: 1us}\n")
                .find("each tier spans more nodes"),
            std::string::npos);
  EXPECT_NE(refusal(groups + "network:\n  - {tier: leaf, nodes: 2, latency: 1us}\n").find("add a tier that joins them"),
            std::string::npos);
  EXPECT_NE(refusal(groups).find("no 'network' tiers"), std::string::npos);
  EXPECT_NE(refusal(groups + "network:\n  - {tier: leaf}\n").find("network[0] (leaf) has no 'latency'"),
            std::string::npos);
  EXPECT_NE(refusal(groups + "network:\n  - {tier: leaf, speed: 1}\n").find("speed"), std::string::npos);
  EXPECT_NE(refusal("node_groups:\n  - {hardware: h100-sxm}\n").find("has no 'nodes'"), std::string::npos);
  // Rates and latencies carry their unit; two groups, two names.
  EXPECT_NE(refusal("node_groups:\n  - {hardware: h100-sxm, nodes: 1, nic_bandwidth: 400}\n").find("give a unit"),
            std::string::npos);
  EXPECT_NE(refusal(groups + "network:\n  - {tier: leaf, latency: 1}\n").find("give a unit"), std::string::npos);
  EXPECT_NE(refusal("node_groups:\n  - {name: g, hardware: h100-sxm, nodes: 1}\n  - {name: g, hardware: a100, nodes: 1}\n"
                    "network:\n  - {tier: leaf}\n")
                .find("a second group named 'g'"),
            std::string::npos);
  // The line of the field.
  EXPECT_NE(refusal("node_groups:\n  - {hardware: h900, nodes: 4}\n").find("bad.yaml:2"), std::string::npos);
}

TEST(Cluster, PlansTakeAClusterOfOneKindAndSimulationsRefuseAMixedOneInOneLine) {
  const testing::CommandResult planned = testing::run("plan --model llama3-8b --hardware gb200-nvl72 --gpus 8 --global-batch 16 --verbose");
  ASSERT_EQ(planned.code, 0) << planned.err;
  EXPECT_NE(planned.out.find("placement on gb200-nvl72, ranks in Megatron's order tp-cp-ep-dp-pp (its default, no flag needed)"),
            std::string::npos)
      << planned.out;
  testing::expect_refused("simulate --model llama3-8b --hardware mixed-h100-a100 --pp 2",
                          "node_groups mix GPU kinds (h100-sxm, a100-80gb)");
  const testing::CommandResult shown = testing::run("hardware show mixed-h100-a100");
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("├─ leaf 0: nodes 0-3 (h100)"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("2:1 oversubscribed"), std::string::npos) << shown.out;
}

// A command's --json output; a failure is reported with its error.
nlohmann::json json_of(const std::string& args) {
  const testing::CommandResult result = testing::run(args + " --json");
  EXPECT_EQ(result.code, 0) << args << "\n" << result.err;
  return result.code == 0 ? nlohmann::json::parse(result.out) : nlohmann::json::object();
}

TEST(Cluster, RankOrderTravelsThroughThePlanFileAndItsReplay) {
  // Llama 3 8B on 128 SuperPOD GPUs: tp-pp-dp keeps each pipeline in a node.
  const std::string plan = testing::temp_path("rank_order_plan.yaml");
  const nlohmann::json report = json_of("plan --model llama3-8b --hardware dgx-h100-superpod --gpus 128 "
                                        "--global-batch 512 --seq 4096 --tp 2 --pp 4 --rank-order tp-pp-dp --out " +
                                        plan);
  ASSERT_TRUE(report.contains("best"));
  EXPECT_EQ(report.at("best").at("rank_order"), "tp-pp-dp");
  EXPECT_EQ(report.at("rank_placement").at("order"), "tp-pp-dp");
  EXPECT_NE(report.at("megatron_args").get<std::string>().find("--use-tp-pp-dp-mapping"), std::string::npos);
  EXPECT_NE(testing::slurp(plan).find("rank_order: tp-pp-dp"), std::string::npos);
  const nlohmann::json replay = json_of("simulate --plan " + plan);
  EXPECT_EQ(replay.value("rank_order", ""), "tp-pp-dp");
  EXPECT_DOUBLE_EQ(replay.value("iteration_time_s", 0.0), report.at("best").at("iteration_time_s").get<double>());
  // The default order re-costs it: stages then cross the network.
  EXPECT_GT(json_of("simulate --plan " + plan + " --rank-order tp-cp-ep-dp-pp").value("iteration_time_s", 0.0),
            replay.value("iteration_time_s", 0.0));
  testing::expect_refused("simulate --plan " + plan + " --rank-order tp-pp-dp --dp 1", "place every rank alike");
  testing::expect_refused("plan --model mixtral-8x7b --hardware h100-sxm --gpus 64 --global-batch 64 "
                          "--rank-order tp-pp-dp",
                          "takes --cp 1 and a model without experts");
}

TEST(Cluster, TraceLabelsEachRankWithItsNode) {
  // t=8 d=8: neighbouring stages are 64 GPUs, 8 nodes of a SuperPOD, apart.
  const std::string trace = testing::temp_path("cluster_trace.json");
  const testing::CommandResult ran = testing::run(
      "simulate --model llama3-8b --hardware dgx-h100-superpod --tp 8 --dp 8 --pp 2 --microbatches 4 --seq 2048 "
      "--trace " + trace);
  ASSERT_EQ(ran.code, 0) << ran.err;
  std::set<std::string> names;
  const nlohmann::json parsed = nlohmann::json::parse(testing::slurp(trace));
  for (const auto& event : parsed.at("traceEvents")) {
    if (event["name"] == "process_name") names.insert(event["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"rank 0 (node 0)", "rank 1 (node 8)"}));
}

}  // namespace
}  // namespace pipeplan::models
