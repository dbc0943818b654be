// Per-stage memory of an MoE pipeline against a measured run: the
// DeepSeek-V3 proxy of NVIDIA/Megatron-LM megatron/core/transformer/README.md
// (commit 7d867ab, "Memory consumption", baseline without offloading). 14
// DeepSeek-V3 layers, all MoE; H100, TP 1, PP 4, EP 16 (64 GPUs: stages 16
// ranks apart, so d = 16), micro-batch 1, BF16, DeepEP, sequence 4096 (the
// ModelZoo DeepSeek-V3 recipe's). Megatron's report_memory, after 10
// iterations, in MiB (2^20 bytes):
//   stage  allocated   max allocated
//     0    24761.03    65203.93
//     1    18907.73    52228.15
//     2    18907.75    45200.83
//     3    29006.82    48166.26
// Stages 1 and 2 hold the same static bytes, and 1F1B keeps one micro-batch
// more in flight on stage 1: their difference is one micro-batch of four MoE
// layers' stored activations. Stage 0's static bytes over stage 1's are the
// embedding's. The measured differences say the split is 4/4/4/2 with one
// MTP module on the last stage (its layout Et*4|t*4|t*4|t*2mL).
//
// What the README leaves unstated is not tested: its static bytes (four
// layers hold 18.47 GiB, less than their bf16 weights and fp32 gradients
// alone, 20.96 GiB, so the expert state was not held as Megatron's defaults
// hold it) and a constant 11.9 GiB every stage reaches beyond its
// activations.
#include <gtest/gtest.h>

#include "models/deepep_buffers.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "step/model_simulation.h"
#include "step/stage_split.h"

namespace pipeplan::step {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

ModelSimulation deepseek_v3_proxy(models::MoeDispatcher dispatcher = models::MoeDispatcher::kDeepEp) {
  models::ModelConfig model = models::load_model("deepseek-v3");
  model.layers = 14;
  model.moe.dense_layers = 0;
  PipelineSetup setup;
  setup.pp = 4;
  setup.microbatches = 32;  // global batch 512 over d = 16
  setup.schedule = "1F1B";
  setup.shape.seq_len = 4096;
  setup.shape.micro_batch_size = 1;
  setup.shape.tp = 1;
  setup.shape.dp = 16;
  setup.shape.ep = 16;
  setup.shape.etp = 1;
  setup.shape.mtp_layers = 1;
  setup.shape.zero = models::ZeroStage::kOptimizer;  // Megatron's distributed optimizer
  setup.shape.routing.dispatcher = dispatcher;
  setup.split = split_from_layout("Et*4|t*4|t*4|t*2mL", 14, 4, 1);
  return simulate_model(model, models::load_hardware("h100-sxm"), setup);
}

std::int64_t static_bytes(const MemoryBreakdown& memory) {
  return memory.weights + memory.gradients + memory.optimizer;
}

TEST(MoeStageMemory, OneMicroBatchOfFourDeepSeekLayersAsMeasured) {
  const ModelSimulation proxy = deepseek_v3_proxy();
  ASSERT_EQ(proxy.memory.size(), 4u);
  EXPECT_EQ(static_bytes(proxy.memory[1]), static_bytes(proxy.memory[2]));
  const double measured = (52228.1533203125 - 45200.8349609375) * kMiB;
  const auto predicted = static_cast<double>(proxy.memory[1].total() - proxy.memory[2].total());
  EXPECT_NEAR(predicted, measured, 0.10 * measured);
}

TEST(MoeStageMemory, TheFirstStagePeaksAboveTheSecondByTheEmbeddingAndOneMicroBatch) {
  const ModelSimulation proxy = deepseek_v3_proxy();
  const double embedding = (24761.02978515625 - 18907.728515625) * kMiB;
  const auto predicted_embedding = static_cast<double>(static_bytes(proxy.memory[0]) - static_bytes(proxy.memory[1]));
  EXPECT_NEAR(predicted_embedding, embedding, 0.10 * embedding);
  const double peaks = (65203.93359375 - 52228.1533203125) * kMiB;
  const auto predicted_peaks = static_cast<double>(proxy.memory[0].total() - proxy.memory[1].total());
  EXPECT_NEAR(predicted_peaks, peaks, 0.10 * peaks);
}

// DeepEP's buffers sit outside PyTorch's allocator, so the README's figures
// leave them out; the GPU holds them once per process, however many MoE
// layers a stage has (16 ranks: two nodes of NVLink peers).
TEST(MoeStageMemory, DeepEpBuffersOncePerRank) {
  const ModelSimulation deepep = deepseek_v3_proxy();
  const ModelSimulation alltoall = deepseek_v3_proxy(models::MoeDispatcher::kAllToAll);
  for (std::size_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(deepep.memory[rank].buffers - alltoall.memory[rank].buffers,
              models::deepep_buffer_bytes(7168 * 2, 16))
        << rank;
  }
}

// The DeepSeek-V3 recipe Megatron-MoE-ModelZoo runs on 1,024 H100s
// (best_practice/DeepSeekV3/run.sh: TP 2, PP 8, VP 4, EP 64, global batch
// 8192, FP8, the all-to-all overlap, recompute mla_up_proj and mlp, one MTP
// module, layout Et|(tt|)*30mL; model_configs/benchmarking/DeepSeek-V3.yaml:
// sequence 4096, the distributed optimizer with overlapped reduce and
// gather, DeepEP) ran: it must fit the 80 GB its GPUs have. FP8 weights are
// not assumed (the larger memory).
TEST(MoeStageMemory, TheModelZooDeepSeekRecipeFitsItsH100s) {
  const models::ModelConfig model = models::load_model("deepseek-v3");
  PipelineSetup setup;
  setup.pp = 8;
  setup.virtual_stages = 4;
  setup.microbatches = 128;  // 8192 over d = 1024 / (2 x 8)
  setup.schedule = "Interleaved1F1B";
  setup.shape.seq_len = 4096;
  setup.shape.tp = 2;
  setup.shape.dp = 64;
  setup.shape.ep = 64;
  setup.shape.etp = 1;
  setup.shape.mtp_layers = 1;
  setup.shape.sequence_parallel = true;
  setup.shape.pipelined = true;
  setup.shape.recompute = models::Recompute::kSelective;
  setup.shape.recompute_modules = models::kMlaUpProj | models::kMlp;
  setup.shape.zero = models::ZeroStage::kOptimizer;
  setup.shape.routing.dispatcher = models::MoeDispatcher::kDeepEp;
  models::RuntimeFlags flags;
  flags.fp8 = true;
  flags.overlap_grad_reduce = true;
  flags.overlap_param_gather = true;
  flags.moe_a2a_overlap = true;
  setup.shape.apply(flags);
  setup.split = split_from_layout("Et|(tt|)*30mL", 61, 32, 1);
  const models::HardwareConfig hardware = models::load_hardware("dgx-h100-cluster");
  const ModelSimulation recipe = simulate_model(model, hardware, setup);
  ASSERT_EQ(recipe.memory.size(), 8u);
  for (std::size_t rank = 0; rank < recipe.memory.size(); ++rank) {
    EXPECT_LE(recipe.memory[rank].total(), hardware.gpu.usable_memory_bytes()) << "rank " << rank;
  }
}

}  // namespace
}  // namespace pipeplan::step
