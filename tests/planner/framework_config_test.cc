// The framework outputs of a plan: a torchtitan TOML fragment and
// Megatron-Bridge recipe overrides. Every key written is checked against
// the field list copied from that framework's config code
// (tests/data/frameworks/), and the values against the values it takes;
// hand-worked plans give the degrees, schedule and split expected, and
// what a framework cannot run is refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "planner/frameworks/megatron_bridge_overrides.h"
#include "planner/frameworks/torchtitan_config.h"
#include "tests/support/cli_support.h"
#include "tests/support/framework_fields.h"

namespace pipeplan::planner {
namespace {

using pipeplan::testing::entry_value;
using pipeplan::testing::toml_entries;
using pipeplan::testing::toml_module_lists;
using pipeplan::testing::yaml_entries;

const pipeplan::testing::FieldList& torchtitan_fields() {
  static const auto list =
      pipeplan::testing::read_field_list(pipeplan::testing::kData + "/frameworks/torchtitan_fields.txt");
  return list;
}

const pipeplan::testing::FieldList& bridge_fields() {
  static const auto list =
      pipeplan::testing::read_field_list(pipeplan::testing::kData + "/frameworks/megatron_bridge_fields.txt");
  return list;
}

// t x p x d with b x m micro-batches, `schedule` with v chunks per rank.
PlanCandidate plan_of(int tp, int pp, int dp, int micro_batch, int microbatches, const std::string& schedule,
                      int virtual_stages, const std::vector<int>& blocks, int layers) {
  PlanCandidate plan;
  plan.tp = tp;
  plan.pp = pp;
  plan.dp = dp;
  plan.micro_batch_size = micro_batch;
  plan.microbatches = microbatches;
  plan.schedule = schedule;
  plan.virtual_stages = virtual_stages;
  plan.sequence_parallel = tp > 1;
  plan.split = step::split_from_counts(blocks, layers);
  return plan;
}

// Blocks per stage read back from the module lists.
std::vector<int> blocks_per_list(const std::vector<std::vector<std::string>>& lists) {
  std::vector<int> blocks;
  for (const std::vector<std::string>& names : lists) {
    int count = 0;
    for (const std::string& name : names) count += name.rfind("layers.", 0) == 0 ? 1 : 0;
    blocks.push_back(count);
  }
  return blocks;
}

TEST(FrameworkConfig, TorchtitanKeysAreInItsFieldList) {
  models::ModelConfig mixtral = models::load_model("mixtral-8x7b");
  std::vector<std::pair<PlanCandidate, const models::ModelConfig*>> plans;
  plans.emplace_back(plan_of(8, 4, 2, 1, 16, "Interleaved1F1B", 2, {4, 4, 4, 4, 4, 4, 4, 4}, 32), nullptr);
  PlanCandidate dense = plan_of(2, 1, 4, 2, 8, "1F1B", 1, {32}, 32);
  dense.cp = 2;
  dense.zero = models::ZeroStage::kWeights;
  dense.recompute = models::Recompute::kSelective;
  dense.runtime.tp_comm_overlap = dense.runtime.fp8 = dense.runtime.grad_reduce_in_bf16 = true;
  plans.emplace_back(dense, nullptr);
  PlanCandidate experts = plan_of(2, 4, 4, 1, 16, "DualPipeV", 2, {4, 4, 4, 4, 4, 4, 4, 4}, 32);
  experts.ep = 4;
  experts.etp = 1;
  experts.routing.dispatcher = models::MoeDispatcher::kDeepEp;
  experts.runtime.fp8 = true;
  plans.emplace_back(experts, &mixtral);
  plans.emplace_back(plan_of(1, 4, 1, 1, 8, "VHalf", 2, {4, 4, 4, 4, 4, 4, 4, 4}, 32), nullptr);
  plans.emplace_back(plan_of(1, 4, 1, 1, 8, "ZBAuto", 1, {8, 8, 8, 8}, 32), nullptr);
  for (const auto& [plan, model] : plans) {
    const FrameworkConfig config = torchtitan_config(plan, 64, 4096, model);
    ASSERT_FALSE(config.text.empty()) << plan.schedule << ": " << ::testing::PrintToString(config.refusals);
    pipeplan::testing::expect_known(toml_entries(config.text), torchtitan_fields(), plan.schedule);
  }
}

TEST(FrameworkConfig, MegatronBridgeKeysAreInItsFieldList) {
  const models::ModelConfig mixtral = models::load_model("mixtral-8x7b");
  PlanCandidate uneven = plan_of(8, 4, 2, 1, 16, "1F1B", 1, {18, 21, 21, 20}, 80);
  uneven.recompute = models::Recompute::kSelective;
  uneven.recompute_modules = models::kCoreAttention | models::kLayerNorm;
  uneven.zero = models::ZeroStage::kOptimizer;
  uneven.runtime = {true, true, true, true, true, false};
  PlanCandidate interleaved = plan_of(2, 4, 4, 1, 16, "Interleaved1F1B", 2, {3, 4, 4, 4, 4, 4, 4, 5}, 32);
  interleaved.cp = 2;
  interleaved.ep = 8;
  interleaved.etp = 1;
  interleaved.routing.capacity_factor = 1.25;
  interleaved.routing.dispatcher = models::MoeDispatcher::kDeepEp;
  interleaved.runtime.moe_a2a_overlap = true;
  interleaved.pipeline_first = true;
  interleaved.recompute = models::Recompute::kFull;
  const std::vector<std::pair<PlanCandidate, const models::ModelConfig*>> plans = {{uneven, nullptr},
                                                                                   {interleaved, &mixtral}};
  for (const auto& [plan, model] : plans) {
    const FrameworkConfig config = megatron_bridge_overrides(plan, 64, 4096, model);
    ASSERT_FALSE(config.text.empty()) << ::testing::PrintToString(config.refusals);
    pipeplan::testing::expect_known(yaml_entries(config.text), bridge_fields(), plan.schedule);
  }
}

// Llama 3 8B (32 blocks) on t=8 p=4 d=2, two chunks per rank: the degrees,
// PyTorch's schedule name, each data-parallel rank's 16 micro-batches and
// the eight stages' modules.
TEST(FrameworkConfig, TorchtitanGivesTheDegreesScheduleAndSplit) {
  PlanCandidate plan = plan_of(8, 4, 2, 1, 16, "interleaved", 2, {3, 4, 4, 4, 4, 4, 4, 5}, 32);
  plan.zero = models::ZeroStage::kOptimizer;
  const FrameworkConfig config = torchtitan_config(plan, 32, 8192);
  const std::vector<pipeplan::testing::ConfigEntry> entries = toml_entries(config.text);
  EXPECT_EQ(entry_value(entries, "parallelism.tensor_parallel_degree"), "8");
  EXPECT_EQ(entry_value(entries, "parallelism.pipeline_parallel_degree"), "4");
  EXPECT_EQ(entry_value(entries, "parallelism.context_parallel_degree"), "1");
  EXPECT_EQ(entry_value(entries, "parallelism.data_parallel_replicate_degree"), "1");
  EXPECT_EQ(entry_value(entries, "parallelism.data_parallel_shard_degree"), "2");
  EXPECT_EQ(entry_value(entries, "parallelism.fsdp_reshard_after_forward"), "default");
  EXPECT_EQ(entry_value(entries, "parallelism.pipeline_parallel_schedule"), "Interleaved1F1B");
  EXPECT_EQ(entry_value(entries, "parallelism.pipeline_parallel_microbatch_size"), "1");
  EXPECT_EQ(entry_value(entries, "training.local_batch_size"), "16");
  EXPECT_EQ(entry_value(entries, "training.global_batch_size"), "32");
  EXPECT_EQ(entry_value(entries, "training.seq_len"), "8192");
  EXPECT_EQ(entry_value(entries, "activation_checkpoint.mode"), "none");
  const auto lists = toml_module_lists(config.text);
  ASSERT_EQ(lists.size(), 8u);
  EXPECT_EQ(lists.front(), (std::vector<std::string>{"tok_embeddings", "layers.0", "layers.1", "layers.2"}));
  EXPECT_EQ(lists[1].front(), "layers.3");
  EXPECT_EQ(lists.back(), (std::vector<std::string>{"layers.27", "layers.28", "layers.29", "layers.30", "layers.31",
                                                    "norm", "output"}));
  // ZeRO-1 has no torchtitan form: FSDP runs in its place, and says so.
  EXPECT_TRUE(config.refusals.empty()) << ::testing::PrintToString(config.refusals);
  ASSERT_EQ(config.notes.size(), 1u);
  EXPECT_NE(config.notes[0].find("ZeRO-1"), std::string::npos);
  EXPECT_NE(config.text.find("# not as planned: ZeRO-1"), std::string::npos);
}

TEST(FrameworkConfig, TorchtitanModuleListsReproduceTheStageLayers) {
  const std::vector<PlanCandidate> plans = {
      plan_of(1, 4, 1, 1, 8, "1F1B", 1, {20, 20, 20, 20}, 80),
      plan_of(1, 4, 1, 1, 8, "1F1B", 1, {18, 21, 21, 20}, 80),
      plan_of(1, 4, 1, 1, 8, "ZBVZeroBubble", 2, {3, 4, 4, 5, 5, 4, 4, 3}, 32),
      plan_of(1, 2, 1, 1, 8, "LoopedBFS", 3, {1, 2, 3, 4, 5, 17}, 32),
  };
  for (const PlanCandidate& plan : plans) {
    const auto lists = toml_module_lists(torchtitan_config(plan, 8, 4096).text);
    EXPECT_EQ(blocks_per_list(lists), plan.split.transformer_layer_counts()) << step::format_layout(plan.split);
    // Blocks in model order across the stages; the embedding first, the norm and output last.
    int next = 0;
    for (std::size_t stage = 0; stage < lists.size(); ++stage) {
      for (const std::string& name : lists[stage]) {
        if (name.rfind("layers.", 0) == 0) {
          EXPECT_EQ(name, "layers." + std::to_string(next++));
        } else if (name == "tok_embeddings") {
          EXPECT_EQ(stage, 0u);
        } else {
          EXPECT_TRUE(name == "norm" || name == "output") << name;
          EXPECT_EQ(stage + 1, lists.size());
        }
      }
    }
    EXPECT_EQ(next, plan.split.layer_count() - 2);
  }
  // The embedding and the loss on stages of their own.
  PlanCandidate apart = plan_of(1, 4, 1, 1, 8, "1F1B", 1, {1, 1, 1, 1}, 4);
  apart.split = step::split_from_layout("E|tt|tt|L", 4, 4);
  const auto lists = toml_module_lists(torchtitan_config(apart, 8, 4096).text);
  EXPECT_EQ(lists, (std::vector<std::vector<std::string>>{
                       {"tok_embeddings"}, {"layers.0", "layers.1"}, {"layers.2", "layers.3"}, {"norm", "output"}}));
}

TEST(FrameworkConfig, TorchtitanRefusesWhatItLacks) {
  const std::vector<int> four = {8, 8, 8, 8};
  for (const std::string schedule : {"ZBH1", "ZBH2", "naive"}) {
    const FrameworkConfig config = torchtitan_config(plan_of(1, 4, 1, 1, 8, schedule, 1, four, 32), 8, 4096);
    EXPECT_TRUE(config.text.empty()) << schedule;
    ASSERT_EQ(config.refusals.size(), 1u) << schedule;
    EXPECT_EQ(config.refusals[0].rfind("schedule " + schedule + ": not among torch.distributed.pipelining's", 0), 0u)
        << config.refusals[0];
  }
  // PyTorch's interleaved 1F1B takes 9 micro-batches on 4 ranks in 2 rounds.
  const FrameworkConfig rounds =
      torchtitan_config(plan_of(1, 4, 1, 1, 9, "Interleaved1F1B", 2, {4, 4, 4, 4, 4, 4, 4, 4}, 32), 9, 4096);
  EXPECT_TRUE(rounds.text.empty());
  EXPECT_NE(rounds.refusals.at(0).find("max(1, m / p) = 2 rounds"), std::string::npos) << rounds.refusals[0];
  // The sequence must divide by t x 2c.
  EXPECT_TRUE(torchtitan_config(plan_of(8, 4, 1, 1, 8, "1F1B", 1, four, 32), 8, 4100).text.empty());
  // DeepEP with the experts split over t.
  models::ModelConfig mixtral = models::load_model("mixtral-8x7b");
  PlanCandidate deepep = plan_of(2, 4, 4, 1, 8, "1F1B", 1, four, 32);
  deepep.ep = 4;
  deepep.etp = 2;
  deepep.routing.dispatcher = models::MoeDispatcher::kDeepEp;
  EXPECT_TRUE(torchtitan_config(deepep, 32, 4096, &mixtral).text.empty());
  // Orders PyTorch has no class for run from their CSV, placed by a class's name.
  const std::string vhalf =
      torchtitan_config(plan_of(1, 4, 1, 1, 8, "VHalf", 2, {4, 4, 4, 4, 4, 4, 4, 4}, 32), 8, 4096).text;
  EXPECT_EQ(entry_value(toml_entries(vhalf), "parallelism.pipeline_parallel_schedule"), "ZBVZeroBubble");
  EXPECT_EQ(entry_value(toml_entries(vhalf), "parallelism.pipeline_parallel_schedule_csv"), "order.csv");
  const std::string searched = torchtitan_config(plan_of(1, 4, 1, 1, 8, "ZBAuto", 1, four, 32), 8, 4096).text;
  EXPECT_EQ(entry_value(toml_entries(searched), "parallelism.pipeline_parallel_schedule"), "PipelineScheduleSingle");
  // Selective recomputation is none of torchtitan's: full runs, with a note.
  PlanCandidate selective = plan_of(1, 4, 1, 1, 8, "1F1B", 1, four, 32);
  selective.recompute = models::Recompute::kSelective;
  const FrameworkConfig full = torchtitan_config(selective, 8, 4096);
  EXPECT_EQ(entry_value(toml_entries(full.text), "activation_checkpoint.mode"), "full");
  EXPECT_TRUE(full.refusals.empty());
  EXPECT_NE(full.notes.at(0).find("selective recomputation (core_attn)"), std::string::npos);
}

TEST(FrameworkConfig, MegatronBridgeGivesTheSplitAsMegatronCoreTakesIt) {
  // Even middle stages: the first and last counts, the layout cleared.
  const FrameworkConfig ends =
      megatron_bridge_overrides(plan_of(8, 4, 2, 1, 16, "1F1B", 1, {18, 21, 21, 20}, 80), 32, 8192);
  auto entries = yaml_entries(ends.text);
  EXPECT_EQ(entry_value(entries, "model.tensor_model_parallel_size"), "8");
  EXPECT_EQ(entry_value(entries, "model.pipeline_model_parallel_size"), "4");
  EXPECT_EQ(entry_value(entries, "model.num_layers_in_first_pipeline_stage"), "18");
  EXPECT_EQ(entry_value(entries, "model.num_layers_in_last_pipeline_stage"), "20");
  EXPECT_EQ(entry_value(entries, "model.pipeline_model_parallel_layout"), "");
  EXPECT_EQ(entry_value(entries, "model.sequence_parallel"), "true");
  EXPECT_EQ(entry_value(entries, "train.micro_batch_size"), "1");
  EXPECT_EQ(entry_value(entries, "train.global_batch_size"), "32");
  EXPECT_EQ(entry_value(entries, "dataset.seq_length"), "8192");
  EXPECT_EQ(entry_value(entries, "model.seq_length"), "8192");
  EXPECT_TRUE(ends.refusals.empty()) << ::testing::PrintToString(ends.refusals);
  EXPECT_TRUE(ends.notes.empty()) << ::testing::PrintToString(ends.notes);
  // Uneven middle stages with two chunks: the layout, and the chunks it implies.
  const FrameworkConfig layout =
      megatron_bridge_overrides(plan_of(1, 2, 1, 1, 8, "Interleaved1F1B", 2, {7, 9, 8, 8}, 32), 8, 4096);
  entries = yaml_entries(layout.text);
  EXPECT_EQ(entry_value(entries, "model.pipeline_model_parallel_layout"), "Et*7|t*9|t*8|t*8L");
  EXPECT_EQ(entry_value(entries, "model.virtual_pipeline_model_parallel_size"), "2");
  EXPECT_EQ(entry_value(entries, "model.num_layers_in_first_pipeline_stage"), "");
  // Schedules Megatron-core does not run are refused, with who runs them.
  const FrameworkConfig vhalf =
      megatron_bridge_overrides(plan_of(1, 4, 1, 1, 8, "VHalf", 2, {4, 4, 4, 4, 4, 4, 4, 4}, 32), 8, 4096);
  EXPECT_TRUE(vhalf.text.empty());
  EXPECT_NE(vhalf.refusals.at(0).find("schedule VHalf: Megatron-core runs 1F1B and interleaved 1F1B only"),
            std::string::npos)
      << vhalf.refusals[0];
}

// The main job's model and GPUs with a fixed layout: both files written,
// their keys the frameworks', their split the plan's.
TEST(FrameworkConfig, PlanWritesBothFilesForItsBestPlan) {
  const std::string titan = pipeplan::testing::temp_path("plan.toml"),
                    bridge = pipeplan::testing::temp_path("plan-bridge.yaml");
  const pipeplan::testing::CommandResult planned = pipeplan::testing::run(
      "plan --model llama3-70b --hardware h100-sxm --gpus 64 --global-batch 256 --seq 8192 --tp 8 --pp 8 "
      "--schedule 1F1B --recompute none --json --torchtitan-out " +
      titan + " --megatron-bridge-out " + bridge);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const auto json = nlohmann::json::parse(planned.out);
  const std::string toml = pipeplan::testing::slurp(titan), yaml = pipeplan::testing::slurp(bridge);
  EXPECT_EQ(json["torchtitan_toml"], toml);
  EXPECT_EQ(json["megatron_bridge_yaml"], yaml);
  pipeplan::testing::expect_known(toml_entries(toml), torchtitan_fields(), titan);
  pipeplan::testing::expect_known(yaml_entries(yaml), bridge_fields(), bridge);
  const auto& best = json["best"];
  const std::vector<int> stage_layers = best["stage_layers"];
  EXPECT_EQ(blocks_per_list(toml_module_lists(toml)), stage_layers);
  const auto entries = toml_entries(toml);
  EXPECT_EQ(entry_value(entries, "parallelism.tensor_parallel_degree"), "8");
  EXPECT_EQ(entry_value(entries, "parallelism.pipeline_parallel_degree"), "8");
  EXPECT_EQ(entry_value(entries, "parallelism.pipeline_parallel_schedule"), "1F1B");
  EXPECT_EQ(entry_value(entries, "training.local_batch_size"), "256");  // 256 sequences, d = 1
  EXPECT_EQ(entry_value(entries, "parallelism.pipeline_parallel_microbatch_size"),
            std::to_string(best["micro_batch_size"].get<int>()));
  EXPECT_EQ(entry_value(yaml_entries(yaml), "train.micro_batch_size"),
            std::to_string(best["micro_batch_size"].get<int>()));
  EXPECT_EQ(entry_value(yaml_entries(yaml), "model.tensor_model_parallel_size"), "8");
  // A schedule the framework lacks: the option is refused in one line.
  pipeplan::testing::expect_refused(
      "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --pp 4 --schedule ZBH1 "
      "--torchtitan-out " +
          titan,
      "--torchtitan-out: torchtitan cannot run the best plan: schedule ZBH1");
  // A plan it runs only otherwise than planned (ZeRO-1, which FSDP has not):
  // refused too, pointing to the search kept to it.
  pipeplan::testing::expect_refused(
      "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --pp 4 --dp 2 --zero 1 "
      "--torchtitan-out " +
          titan,
      "--framework torchtitan` plans within it");
}

}  // namespace
}  // namespace pipeplan::planner
