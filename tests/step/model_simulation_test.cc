// A model on hardware through the simulator: per-rank memory breakdowns and
// the throughput figures. Sources: reference.md (Llama 3 70B embedding
// table 128256 x 8192 x 2 B on the first stage; Korthikanti et al. 2022,
// App. A, model FLOPs 72 B L s h^2 (1 + s/(6h) + V/(12hL))).
#include "step/model_simulation.h"

#include <gtest/gtest.h>

#include "models/hardware.h"
#include "models/model_config.h"

namespace pipeplan::step {
namespace {

ModelSimulation run(const std::string& model_name, const models::TrainingShape& shape, int pp, int m,
                          const std::string& schedule = "1F1B") {
  const models::ModelConfig model = models::load_model(model_name);
  PipelineSetup setup;
  setup.shape = shape;
  setup.pp = pp;
  setup.microbatches = m;
  setup.schedule = schedule;
  return simulate_model(models::expand_layers(model, shape), models::load_hardware("h100-sxm"), setup);
}

TEST(ModelSimulation, EmbeddingTableSitsOnTheFirstStage) {
  models::TrainingShape shape;
  shape.seq_len = 2048;
  const ModelSimulation result = run("llama3-70b", shape, 4, 8);
  // Rank 0 holds the embedding and 20 blocks, rank 1 20 blocks: the bf16
  // weights differ by the table, 128256 x 8192 x 2 bytes.
  EXPECT_EQ(result.memory[0].weights - result.memory[1].weights, 2'101'346'304);
  EXPECT_EQ(result.layers[0].front(), "embedding");
  EXPECT_EQ(result.layers[3].back(), "output");
}

TEST(ModelSimulation, EndStagesPeakAboveTheMiddleAndSayWhy) {
  // Llama 3 70B, pp = 4, even split, t = 8 with sequence parallelism, full
  // recompute, 1F1B on 8 x H100 per stage.
  models::TrainingShape shape;
  shape.seq_len = 8192;
  shape.tp = 8;
  shape.sequence_parallel = true;
  shape.recompute = models::Recompute::kFull;
  const ModelSimulation result = run("llama3-70b", shape, 4, 32);
  const auto& first = result.memory.front();
  const auto& last = result.memory.back();
  for (std::size_t middle : {1u, 2u}) {
    const auto& mid = result.memory[middle];
    EXPECT_GT(first.total(), mid.total());
    EXPECT_GT(last.total(), mid.total());
    EXPECT_GT(first.weights, mid.weights);          // the embedding table
    EXPECT_GT(first.activations, mid.activations);  // 4 micro-batches in flight against 3 and 2
    EXPECT_GT(last.weights, mid.weights);           // the output layer
    EXPECT_EQ(mid.logits, 0);
  }
  EXPECT_EQ(last.logits, 4LL * 8192 * 128256 / 8);  // fp32 logits of one micro-batch
  for (std::size_t rank = 0; rank < result.memory.size(); ++rank) {
    EXPECT_EQ(result.memory[rank].total(), result.report.ranks_detail[rank].peak_memory_bytes);
  }
}

TEST(ModelSimulation, MfuCountsKorthikantiModelFlops) {
  models::TrainingShape shape;
  shape.seq_len = 2048;
  shape.tp = 8;
  shape.dp = 2;
  shape.sequence_parallel = true;
  shape.recompute = models::Recompute::kSelective;  // recomputation is not model FLOPs
  const int pp = 8, m = 16;
  const ModelSimulation result = run("gpt3-175b", shape, pp, m);
  const double batch = 1.0 * m * shape.dp, s = 2048, h = 12288, L = 96, V = 51200;
  const double model_flops = 72 * batch * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  const double achieved = result.mfu * result.iteration_time_s * result.gpus * 989e12;
  EXPECT_NEAR(achieved / model_flops, 1.0, 1e-9);
  EXPECT_EQ(result.gpus, 8 * 8 * 2);
  EXPECT_NEAR(result.tokens_per_s, batch * s / result.iteration_time_s, 1e-6);
  EXPECT_GT(result.gradient_sync_s, 0);
  EXPECT_NEAR(result.iteration_time_s, result.pipeline_s + result.gradient_sync_s + result.optimizer_step_s, 1e-12);
}

TEST(ModelSimulation, UserSplitIsHonoured) {
  models::TrainingShape shape;
  shape.seq_len = 2048;
  const models::ModelConfig model = models::load_model("llama3-8b");
  PipelineSetup setup;
  setup.shape = shape;
  setup.pp = 4;
  setup.microbatches = 8;
  setup.split = split_from_counts({7, 9, 9, 7}, 32);
  const ModelSimulation result =
      simulate_model(models::expand_layers(model, shape), models::load_hardware("h100-sxm"), setup);
  EXPECT_EQ(result.layers[0].size(), 8u);  // embedding + 7 blocks
  EXPECT_EQ(result.layers[1].size(), 9u);
  EXPECT_EQ(result.layers[3].size(), 8u);  // 7 blocks + output
}

}  // namespace
}  // namespace pipeplan::step
