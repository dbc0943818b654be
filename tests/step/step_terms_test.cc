// The step time by term (`simulate --explain`): every rank's terms add up to
// the iteration, the compute terms to the rank's busy time, and each term is
// zero where the setup has none of its cause. The GPT-3 175B setup is
// NVIDIA's DGX H100 benchmark (reference.md, "Measured training runs":
// TP4 PP8 VP12, micro-batch 1, seq 2048, global batch 256 on 128 GPUs).
#include "step/step_terms.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "step/model_simulation.h"

namespace pipeplan::step {
namespace {

ModelSimulation explained(const std::string& model_name, const std::string& hardware,
                                const models::TrainingShape& shape, int pp, int m, const std::string& schedule,
                                int virtual_stages = 0) {
  PipelineSetup setup;
  setup.shape = shape;
  setup.pp = pp;
  setup.microbatches = m;
  setup.schedule = schedule;
  setup.virtual_stages = virtual_stages;
  setup.explain = true;
  return simulate_model(models::expand_layers(models::load_model(model_name), shape),
                              models::load_hardware(hardware), setup);
}

models::TrainingShape gpt3_shape() {
  models::TrainingShape shape;
  shape.seq_len = 2048;
  shape.tp = 4;
  shape.dp = 4;
  shape.zero = models::ZeroStage::kOptimizer;
  shape.sequence_parallel = true;
  shape.recompute = models::Recompute::kSelective;
  return shape;
}

TEST(StepTerms, EveryRankAddsUpToTheIteration) {
  const ModelSimulation result =
      explained("gpt3-175b", "dgx-h100-cluster", gpt3_shape(), 8, 64, "Interleaved1F1B", 12);
  ASSERT_EQ(result.terms.size(), 8u);
  for (const StepTerms& terms : result.terms) {
    const sim::RankReport& rank = result.report.ranks_detail[static_cast<std::size_t>(terms.rank)];
    EXPECT_NEAR(terms.total_s(), result.iteration_time_s, 1e-12 * result.iteration_time_s);
    EXPECT_NEAR(terms.gemm_s + terms.attention_s + terms.elementwise_s + terms.tp_comm_s + terms.cp_comm_s +
                    terms.shard_comm_s + terms.overhead_s,
                rank.busy_s, 1e-12 * rank.busy_s);
    // 64 micro-batches through 12 chunks of one layer, a forward and a
    // backward each.
    const models::HardwareConfig h100 = models::load_hardware("h100-sxm");
    EXPECT_NEAR(terms.overhead_s, 64 * 12 * 2 * (h100.layer_overhead_s + h100.pass_overhead_s), 1e-12);
    EXPECT_NEAR(terms.p2p_exposed_s + terms.bubble_s, result.pipeline_s - rank.busy_s, 1e-9);
    EXPECT_EQ(terms.dp_sync_s, result.gradient_sync_s);
    EXPECT_EQ(terms.optimizer_s, result.optimizer_step_s);
    for (double term : {terms.gemm_s, terms.attention_s, terms.elementwise_s, terms.tp_comm_s, terms.overhead_s,
                        terms.p2p_exposed_s, terms.bubble_s, terms.dp_sync_s, terms.optimizer_s}) {
      EXPECT_GT(term, 0);
    }
  }
}

// A mixture of experts' parts of three terms: its grouped GEMMs within
// GEMM, its routing within elementwise, its passes waiting on the host
// within overhead; a dense model has none.
TEST(StepTerms, ExpertsGroupedGemmsAndRoutingArePartsOfTheirTerms) {
  // GPT-3's setup (t4 d4, sequence parallel) with Mixtral's experts over 8 of the 16 ranks.
  models::TrainingShape shape = gpt3_shape();
  shape.ep = 8;
  shape.etp = 1;
  const ModelSimulation moe = explained("mixtral-8x7b", "h100-sxm", shape, 2, 8, "1F1B");
  for (const StepTerms& terms : moe.terms) {
    EXPECT_GT(terms.expert_gemm_s, 0);
    EXPECT_LT(terms.expert_gemm_s, terms.gemm_s);
    EXPECT_GT(terms.routing_s, 0);
    EXPECT_LT(terms.routing_s, terms.elementwise_s);
    EXPECT_NEAR(terms.total_s(), moe.iteration_time_s, 1e-12 * moe.iteration_time_s);
    // Each of the rank's 16 layers x 8 micro-batches x 2 passes pays the
    // fixed overhead or waits on the host: the wait is what lies beyond it.
    EXPECT_GT(terms.moe_host_s, 0);
    EXPECT_NEAR(terms.overhead_s - terms.moe_host_s, 16 * 8 * 2 * models::load_hardware("h100-sxm").layer_overhead_s,
                1e-12);
  }
  for (const StepTerms& terms : explained("gpt3-175b", "h100-sxm", gpt3_shape(), 8, 16, "1F1B").terms) {
    EXPECT_EQ(terms.expert_gemm_s, 0);
    EXPECT_EQ(terms.routing_s, 0);
    EXPECT_EQ(terms.moe_host_s, 0);
  }
}

TEST(StepTerms, TheCostOutsideKernelsFollowsTheLayers) {
  // 12 layers per rank at VP 12 or VP 6: the same 64 x 12 forwards and
  // backwards of a layer, so the same overhead when only layers pay it;
  // full recomputation launches each forward again in the backward.
  const models::HardwareConfig h100 = models::load_hardware("h100-sxm");
  ASSERT_EQ(h100.pass_overhead_s, 0);
  const double per_layer = h100.layer_overhead_s;
  const ModelSimulation twelve =
      explained("gpt3-175b", "dgx-h100-cluster", gpt3_shape(), 8, 64, "Interleaved1F1B", 12);
  const ModelSimulation six =
      explained("gpt3-175b", "dgx-h100-cluster", gpt3_shape(), 8, 64, "Interleaved1F1B", 6);
  models::TrainingShape full = gpt3_shape();
  full.recompute = models::Recompute::kFull;
  const ModelSimulation recomputed = explained("gpt3-175b", "dgx-h100-cluster", full, 8, 64, "1F1B", 1);
  for (const ModelSimulation* result : {&twelve, &six}) {
    for (const StepTerms& terms : result->terms) EXPECT_NEAR(terms.overhead_s, 64 * 12 * 2 * per_layer, 1e-12);
  }
  for (const StepTerms& terms : recomputed.terms) EXPECT_NEAR(terms.overhead_s, 64 * 12 * 3 * per_layer, 1e-12);
}

TEST(StepTerms, OverlappedGradientSyncHidesBehindTheBackward) {
  // Megatron's --overlap-grad-reduce / --overlap-param-gather: with 12
  // chunks per rank most of each chunk's reduce-scatter runs behind the
  // chunks still in backward; never more exposed than without overlap.
  const ModelSimulation plain =
      explained("gpt3-175b", "dgx-h100-cluster", gpt3_shape(), 8, 64, "Interleaved1F1B", 12);
  models::TrainingShape shape = gpt3_shape();
  shape.runtime.overlap_grad_reduce = true;
  const ModelSimulation reduce = explained("gpt3-175b", "dgx-h100-cluster", shape, 8, 64, "Interleaved1F1B", 12);
  shape.runtime.overlap_param_gather = true;
  const ModelSimulation both = explained("gpt3-175b", "dgx-h100-cluster", shape, 8, 64, "Interleaved1F1B", 12);
  EXPECT_LT(reduce.gradient_sync_s, 0.6 * plain.gradient_sync_s);
  EXPECT_LT(both.gradient_sync_s, reduce.gradient_sync_s);
  EXPECT_GE(both.gradient_sync_s, 0);
  EXPECT_EQ(both.pipeline_s, plain.pipeline_s);  // the pipeline itself is untouched
  // One chunk per rank: only the last backward's layers hide their
  // gradients' reduction, so most of it stays exposed.
  const ModelSimulation one = explained("gpt3-175b", "dgx-h100-cluster", shape, 8, 64, "1F1B");
  models::TrainingShape no_overlap = gpt3_shape();
  const ModelSimulation one_plain = explained("gpt3-175b", "dgx-h100-cluster", no_overlap, 8, 64, "1F1B");
  EXPECT_LT(one.gradient_sync_s, one_plain.gradient_sync_s);
  EXPECT_GT(one.gradient_sync_s, 0.5 * one_plain.gradient_sync_s);
}

TEST(StepTerms, OneGpuHasNoCommunicationAndNoBubble) {
  models::TrainingShape shape;
  shape.seq_len = 512;
  const ModelSimulation result = explained("gpt2-small", "h100-sxm", shape, 1, 4, "1F1B");
  ASSERT_EQ(result.terms.size(), 1u);
  const StepTerms& terms = result.terms.front();
  EXPECT_EQ(terms.tp_comm_s, 0);
  EXPECT_EQ(terms.p2p_exposed_s, 0);
  EXPECT_EQ(terms.bubble_s, 0);
  EXPECT_EQ(terms.dp_sync_s, 0);
  EXPECT_GT(terms.gemm_s, 0);
  EXPECT_NEAR(terms.total_s(), result.iteration_time_s, 1e-12 * result.iteration_time_s);
}

TEST(StepTerms, TransfersAddOneFigureForThePipeline) {
  // Four stages on NVLink: each transfer on the critical path (latency plus
  // 1024 x 768 x 2 bytes) lengthens the pipeline, by the same amount for
  // every rank; the rest of each rank's idle time is the bubble.
  models::TrainingShape shape;
  shape.seq_len = 1024;
  const ModelSimulation result = explained("gpt2-small", "h100-sxm", shape, 4, 8, "1F1B");
  for (const StepTerms& terms : result.terms) {
    EXPECT_EQ(terms.p2p_exposed_s, result.terms.front().p2p_exposed_s);
    EXPECT_GT(terms.bubble_s, 0);
  }
  EXPECT_GT(result.terms.front().p2p_exposed_s, 0);
}

TEST(StepTerms, MeasuredCostsHaveNoTermsAndAreRefused) {
  PipelineSetup setup;
  setup.pp = 1;
  setup.explain = true;
  const models::Profile profile;
  setup.profile = &profile;
  const models::ModelConfig model = models::load_model("tiny");
  EXPECT_THROW(simulate_model(models::expand_layers(model, setup.shape), models::load_hardware("cpu"), setup),
               InputError);
}

}  // namespace
}  // namespace pipeplan::step
