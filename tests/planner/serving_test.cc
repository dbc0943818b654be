// The serving simulation and its cost model against closed forms: KV bytes
// per token, a lone request's decode step as the sum of its stages and
// hops, a full pipeline's throughput as its slowest stage allows, and the
// scheduler's invariants under a cache too small for its load.
#include "sim/serving.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "models/serving_costs.h"
#include "planner/serve/serving_step_costs.h"
#include "sim/kv_use_trace.h"
#include "sim/quantile_sketch.h"
#include "sim/serving_metrics.h"
#include "sim/serving_workload.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan;

// Llama 3 70B: 80 layers x 2 (K and V) x 8 KV heads x 128 x 2 bytes
// (GQA; meta-llama/Meta-Llama-3-70B config.json).
TEST(KvCache, Llama3_70bBytesPerToken) {
  const models::ModelConfig model = models::load_model("llama3-70b");
  EXPECT_EQ(models::kv_bytes_per_token(model, 1, 2), 327'680);
  EXPECT_EQ(models::kv_bytes_per_token(model, 8, 2), 327'680 / 8);  // one KV head per rank
  EXPECT_EQ(models::kv_bytes_per_token(model, 1, 1), 327'680 / 2);  // FP8 cache
}

// DeepSeek-V3's MLA caches the 512-wide latent and the 64-wide RoPE key per
// layer (config.json kv_lora_rank, qk_rope_head_dim), 61 layers in BF16,
// whole on every tensor-parallel rank.
TEST(KvCache, DeepSeekV3LatentBytesPerToken) {
  const models::ModelConfig model = models::load_model("deepseek-v3");
  EXPECT_EQ(models::kv_bytes_per_token(model, 1, 2), 61 * (512 + 64) * 2);
  EXPECT_EQ(models::kv_bytes_per_token(model, 8, 2), 70'272);
}

// vLLM's get_pp_indices: the remainder to the stages before the last.
TEST(ServingLayout, VllmLayerSplit) {
  EXPECT_EQ(models::even_stage_layers(80, 4), (std::vector<int>{20, 20, 20, 20}));
  EXPECT_EQ(models::even_stage_layers(61, 4), (std::vector<int>{15, 15, 16, 15}));
  EXPECT_EQ(models::even_stage_layers(10, 4), (std::vector<int>{2, 3, 3, 2}));
  EXPECT_EQ(models::even_stage_layers(7, 1), (std::vector<int>{7}));
}


models::ServingStepModel llama_pipeline(int tp, int pp) {
  models::ServingLayout layout;
  layout.tp = tp;
  layout.stage_layers = models::even_stage_layers(32, pp);
  return models::ServingStepModel(models::load_model("llama3-8b"), models::load_hardware("h100-sxm"), layout);
}

// Alone in the pipeline, a request's k-th decode runs through every stage
// and hop in turn: each gap between its tokens is the sum of the stages'
// step times on that one token, the p - 1 hops and the sampled token's
// return to the first stage.
TEST(ServingSimulation, LoneDecodeStepIsTheSumOfStagesAndHops) {
  const models::ServingStepModel model = llama_pipeline(2, 4);
  const planner::ServingStepCosts costs(model);
  const int prompt = 100, output = 6;
  sim::SchedulerLimits limits;
  limits.kv_blocks = 1000;
  const sim::ServingRun run = sim::simulate_serving({{{0, prompt, output}}, 0}, costs, limits);
  ASSERT_EQ(run.token_gaps_s.count(), output - 1);
  double sum = 0, least = 1e300, greatest = 0;
  for (int k = 1; k < output; ++k) {
    StepLoad load;
    load.tokens = 1;
    load.sampled = 1;
    const double cached = prompt + k - 1;  // the prompt and the tokens before the one decoded
    load.context_tokens = cached;
    load.decode_pairs = cached + 1;
    double expected = model.return_s(load);
    for (int s = 0; s < 4; ++s) expected += model.step_s(s, load) + (s < 3 ? model.hop_s(s, load) : 0);
    sum += expected;
    least = std::min(least, expected);
    greatest = std::max(greatest, expected);
  }
  // The gaps are sketched: their sum, least and greatest are exact.
  EXPECT_NEAR(run.token_gaps_s.sum(), sum, sum * 1e-9);
  EXPECT_NEAR(run.token_gaps_s.least(), least, least * 1e-9);
  EXPECT_NEAR(run.token_gaps_s.greatest(), greatest, greatest * 1e-9);
  // Its first token: the prompt through every stage the same way.
  StepLoad prefill;
  prefill.tokens = prompt;
  prefill.sampled = 1;
  prefill.prefill_pairs = prompt * (prompt + 1.0) / 2;
  double first = model.return_s(prefill);
  for (int s = 0; s < 4; ++s) first += model.step_s(s, prefill) + (s < 3 ? model.hop_s(s, prefill) : 0);
  EXPECT_NEAR(run.requests[0].first_token_s, first, first * 1e-12);
}

// The sketch against brute force: every quantile within alpha of the
// exact order statistic of that rank, in buckets that do not grow with the
// count.
TEST(ServingSimulation, TheGapSketchHoldsItsRelativeError) {
  std::mt19937_64 engine(11);
  std::lognormal_distribution<double> gap(-6, 1.5);
  sim::QuantileSketch sketch;
  std::vector<double> samples;
  for (int i = 0; i < 200'000; ++i) {
    samples.push_back(i % 1000 == 0 ? 0.0 : gap(engine));
    sketch.add(samples.back());
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.0, 0.001, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const double exact = samples[static_cast<std::size_t>(std::floor(q * static_cast<double>(samples.size() - 1)))];
    EXPECT_NEAR(sketch.quantile(q), exact, 1e-3 * exact + 1e-15) << "q " << q;
  }
  EXPECT_EQ(sketch.count(), 200'000);
  // Buckets: at most one per factor gamma = 1.001 / 0.999 between the least
  // and the greatest value above 0, whatever the count.
  for (int i = 0; i < 200'000; ++i) sketch.add(gap(engine));
  const double span = std::log(sketch.greatest() / samples[200]) / std::log(1.001 / 0.999);
  EXPECT_LE(static_cast<double>(sketch.buckets()), span + 2);
}

// The cache's trace against every sample kept: the weighted sum and peak
// exact, the series thinned to evenly spaced batches and bounded.
TEST(ServingSimulation, TheKvTraceIsExactInSumAndBoundedInSamples) {
  sim::KvUseTrace trace;
  double block_seconds = 0;
  const int batches = 1'000'003;
  for (int i = 0; i < batches; ++i) {
    const std::int64_t blocks = (static_cast<std::int64_t>(i) * 7919) % 1000;
    trace.add(0.5 * i, blocks);
    if (i + 1 < batches) block_seconds += 0.5 * static_cast<double>(blocks);
  }
  EXPECT_DOUBLE_EQ(trace.block_seconds(), block_seconds);
  EXPECT_EQ(trace.peak_blocks(), 999);
  EXPECT_EQ(trace.samples_seen(), batches);
  const auto& series = trace.series();
  EXPECT_LT(series.size(), 2 * sim::KvUseTrace::kWantedSamples);
  EXPECT_GE(series.size(), sim::KvUseTrace::kWantedSamples);
  // Every kept sample is batch k x stride's.
  const double stride = series[1].first / 0.5;
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto batch = static_cast<std::int64_t>(k) * static_cast<std::int64_t>(stride);
    EXPECT_EQ(series[k].first, 0.5 * static_cast<double>(batch));
    EXPECT_EQ(series[k].second, (batch * 7919) % 1000);
  }
}

// Stage s takes per_token[s] seconds a token, links are free.
class LinearCosts : public sim::ServingCosts {
 public:
  explicit LinearCosts(std::vector<double> per_token) : per_token_(std::move(per_token)) {}
  int stages() const override { return static_cast<int>(per_token_.size()); }
  double stage_s(int stage, const StepLoad& load) const override {
    return per_token_[static_cast<std::size_t>(stage)] * load.tokens;
  }
  double hop_s(int, const StepLoad&) const override { return 0; }
  double return_s(const StepLoad&) const override { return 0; }

 private:
  std::vector<double> per_token_;
};

// With p batches of B decodes circulating, the slowest stage serves every
// batch once per round: each token waits p x its step, and the pipeline
// delivers B tokens per slowest step.
TEST(ServingSimulation, FullPipelineRunsAtTheSlowestStage) {
  const std::vector<double> per_token{1e-4, 3e-4, 2e-4, 1e-4};
  const LinearCosts costs(per_token);
  const int p = 4, batch = 8;
  sim::SchedulerLimits limits;
  limits.max_sequences = p * batch;
  limits.max_batch_tokens = batch;  // each batch takes B one-token requests
  limits.kv_blocks = 10'000;
  sim::ServingWorkload workload;
  workload.concurrency = p * batch;
  workload.requests.assign(static_cast<std::size_t>(p * batch), {0, 1, 400});
  const sim::ServingRun run = sim::simulate_serving(workload, costs, limits);
  const double slowest = 3e-4 * batch;
  // The median gap, within the sketch's 0.1 %.
  EXPECT_NEAR(run.token_gaps_s.quantile(0.5), p * slowest, 1e-3 * p * slowest);
  const sim::ServingSummary summary = sim::summarize_serving({run});
  EXPECT_NEAR(summary.output_tokens_per_s, batch / slowest, 0.02 * batch / slowest);
  // Every stage but the slowest idles for its share of the round.
  EXPECT_NEAR(summary.stage_idle[1], 0.0, 0.02);
  EXPECT_NEAR(summary.stage_idle[0], 1 - 1.0 / 3, 0.02);
}

// A cache far too small for its load: requests are preempted and
// recomputed, never more blocks are held than there are, and every
// request completes with all its tokens.
TEST(ServingSimulation, PreemptionKeepsTheCacheWithinItsBlocks) {
  const LinearCosts costs({1e-4, 1e-4});
  sim::SchedulerLimits limits;
  limits.kv_blocks = 40;  // 640 tokens
  limits.max_batch_tokens = 256;
  sim::ServingWorkload workload;
  workload.requests = sim::draw_requests(200, 50, {100, 300}, {20, 200}, 7);
  const sim::ServingRun run = sim::simulate_serving(workload, costs, limits);
  EXPECT_GT(run.preemptions, 0);
  EXPECT_LE(run.kv_used.peak_blocks(), limits.kv_blocks);
  for (const auto& [time, blocks] : run.kv_used.series()) EXPECT_LE(blocks, limits.kv_blocks);
  std::size_t gaps = 0;
  for (std::size_t r = 0; r < run.requests.size(); ++r) {
    const sim::RequestRecord& record = run.requests[r];
    EXPECT_GE(record.first_token_s, record.arrival_s);
    EXPECT_GE(record.finish_s, record.first_token_s);
    gaps += static_cast<std::size_t>(record.output_tokens - 1);
  }
  EXPECT_EQ(run.token_gaps_s.count(), static_cast<std::int64_t>(gaps));
  EXPECT_EQ(run.kv_used.last_blocks(), 0);  // all freed
}

// Requests that arrive at one instant are seen by one scheduling step: the
// first batch holds all four prompts, and they share its end.
TEST(ServingSimulation, SimultaneousArrivalsShareTheFirstBatch) {
  const LinearCosts costs({1e-4, 2e-4});
  sim::SchedulerLimits limits;
  limits.kv_blocks = 1000;
  sim::ServingWorkload workload;
  workload.concurrency = 4;
  workload.requests.assign(4, {0, 100, 3});
  const sim::ServingRun run = sim::simulate_serving(workload, costs, limits, true);
  EXPECT_EQ(run.spans.front().sequences, 4);
  EXPECT_EQ(run.spans.front().tokens, 400);
  for (const sim::RequestRecord& record : run.requests) EXPECT_NEAR(record.first_token_s, 400 * 3e-4, 1e-12);
}

TEST(ServingSimulation, RequestLongerThanTheCacheIsRefused) {
  const LinearCosts costs({1e-4});
  sim::SchedulerLimits limits;
  limits.kv_blocks = 4;  // 64 tokens
  EXPECT_THROW(sim::simulate_serving({{{0, 60, 6}}, 0}, costs, limits), InputError);
  EXPECT_NO_THROW(sim::simulate_serving({{{0, 60, 5}}, 0}, costs, limits));  // the last token is never cached
}

TEST(ServingWorkload, SameSeedSameRun) {
  const models::ServingStepModel model = llama_pipeline(1, 2);
  const planner::ServingStepCosts costs(model);
  sim::SchedulerLimits limits;
  limits.kv_blocks = 20'000;
  const auto run_with = [&](std::uint64_t seed) {
    return sim::simulate_serving({sim::draw_requests(300, 20, {64, 2048}, {16, 256}, seed), 0}, costs, limits);
  };
  const sim::ServingRun a = run_with(3), b = run_with(3), c = run_with(4);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (std::size_t r = 0; r < a.requests.size(); ++r) {
    EXPECT_EQ(a.requests[r].finish_s, b.requests[r].finish_s);
    EXPECT_EQ(a.requests[r].first_token_s, b.requests[r].first_token_s);
  }
  EXPECT_NE(a.end_s, c.end_s);
}

TEST(ServingWorkload, DrawsWithinTheRanges) {
  const std::vector<sim::ServingRequest> requests = sim::draw_requests(2000, 10, {5, 9}, {7, 7}, 1);
  double last = 0;
  std::vector<int> seen(10, 0);
  for (const sim::ServingRequest& request : requests) {
    EXPECT_GE(request.arrival_s, last);
    last = request.arrival_s;
    ASSERT_GE(request.prompt_tokens, 5);
    ASSERT_LE(request.prompt_tokens, 9);
    ++seen[static_cast<std::size_t>(request.prompt_tokens)];
    EXPECT_EQ(request.output_tokens, 7);
  }
  for (int n = 5; n <= 9; ++n) EXPECT_GT(seen[static_cast<std::size_t>(n)], 300);
  // Poisson at 10/s: 2000 arrivals take about 200 s (within 5 standard deviations, 22 s).
  EXPECT_NEAR(last, 200, 22);
}

TEST(ServingWorkload, TraceCsv) {
  const auto requests =
      sim::parse_request_trace("# a trace\narrival_s,prompt_tokens,output_tokens\n0,10,5\n0.25, 2000 ,1\n", "t.csv");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].arrival_s, 0.25);
  EXPECT_EQ(requests[1].prompt_tokens, 2000);
  EXPECT_EQ(requests[1].output_tokens, 1);
  const auto error = [](const std::string& text) {
    try {
      sim::parse_request_trace(text, "t.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("arrival,prompt,output\n0,1,1\n").find("t.csv:1: the header"), std::string::npos);
  EXPECT_NE(error("arrival_s,prompt_tokens,output_tokens\n-1,1,1\n").find("t.csv:2: arrival_s"), std::string::npos);
  EXPECT_NE(error("arrival_s,prompt_tokens,output_tokens\n0,0,1\n").find("t.csv:2: prompt_tokens"), std::string::npos);
  EXPECT_NE(error("arrival_s,prompt_tokens,output_tokens\n0,1\n").find("three fields"), std::string::npos);
  EXPECT_NE(error("arrival_s,prompt_tokens,output_tokens\n").find("no requests"), std::string::npos);
  EXPECT_NE(error("arrival_s,prompt_tokens,output_tokens\n1e300,1,1\n").find("t.csv:2: arrival_s '1e300' is past"),
            std::string::npos);
  // Saved with a UTF-8 byte-order mark (legal; Windows editors write it): the same trace.
  const std::string marked =
      pipeplan::testing::write_temp("marked_trace.csv", "\xEF\xBB\xBF"
                                          "arrival_s,prompt_tokens,output_tokens\n0,10,5\n");
  const auto read = sim::read_request_trace(marked);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].prompt_tokens, 10);
}

TEST(ServingWorkload, LengthRanges) {
  EXPECT_EQ(sim::parse_length_range("1024", "--prompt-tokens").high, 1024);
  EXPECT_EQ(sim::parse_length_range("512:2048", "--prompt-tokens").low, 512);
  EXPECT_THROW(sim::parse_length_range("2048:512", "--prompt-tokens"), InputError);
  EXPECT_THROW(sim::parse_length_range("0", "--prompt-tokens"), InputError);
  EXPECT_THROW(sim::parse_length_range("12x", "--prompt-tokens"), InputError);
}

TEST(ServingMetrics, PercentilesInterpolate) {
  const sim::Percentiles p = sim::percentiles({4, 1, 3, 2, 5});
  EXPECT_DOUBLE_EQ(p.mean, 3);
  EXPECT_DOUBLE_EQ(p.p50, 3);
  EXPECT_DOUBLE_EQ(p.p90, 4.6);
  EXPECT_DOUBLE_EQ(p.p99, 4.96);
}

}  // namespace
