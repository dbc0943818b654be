// The profiler: the measured table of the tiny model and its YAML round
// trip, refusals (schema version, unknown layer kind), the link fit, heap
// accounting through the allocator, and measured costs replacing the
// analytical ones in the simulator.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/profile_file.h"
#include "profiler/layer_profiler.h"
#include "profiler/memory_probe.h"
#include "step/model_simulation.h"
#include "step/profile_costs.h"
#include "tests/support/temp_files.h"

namespace pipeplan::profiler {
namespace {

using pipeplan::testing::write_temp;

models::Profile tiny_profile() {
  ProfileRequest request;
  request.model = models::load_model("tiny");
  request.micro_batch_sizes = {1, 2};
  request.seq_lens = {16, 32};
  request.warmup = 0;
  request.repeats = 2;
  return profile_layers_cpu(request);
}

const models::Profile& cached_tiny_profile() {
  static const models::Profile profile = tiny_profile();
  return profile;
}

TEST(Profiler, MeasuresEveryLayerKindAtEveryShape) {
  const models::Profile& profile = cached_tiny_profile();
  EXPECT_EQ(profile.backend, "cpu");
  EXPECT_EQ(profile.dtype, "fp32");
  EXPECT_EQ(profile.model, "tiny");
  EXPECT_EQ(profile.device.rfind("cpu", 0), 0u);
  EXPECT_EQ(profile.date.size(), 20u);  // 2026-11-29T16:58:31Z
  ASSERT_EQ(profile.layers.size(), 3u * 4u);
  for (const models::LayerMeasurement& m : profile.layers) {
    SCOPED_TRACE(m.layer + " " + std::to_string(m.micro_batch_size) + "x" + std::to_string(m.seq_len));
    EXPECT_GT(m.forward.median_s, 0);
    EXPECT_GT(m.backward_input.median_s, 0);
    EXPECT_GT(m.backward_weight.median_s, 0);
    EXPECT_EQ(m.forward.runs, 2);
    EXPECT_LE(m.forward.min_s, m.forward.median_s);
    EXPECT_LE(m.forward.median_s, m.forward.max_s);
    EXPECT_GT(m.activation_bytes, 0);
    EXPECT_GE(m.peak_working_bytes, 0);
  }
}

TEST(Profiler, BlockFlopsFollowTheMatrixProducts) {
  // tiny: h = 64, ffn = 256, 4 heads of 16, 2 kv heads, SwiGLU. Per token
  // the linear layers do 2 x (h (h + 2 kv d) + h h + 3 h ffn) FLOPs forward
  // and the same again for each of I and W; attention adds 4 s d per head
  // forward (q k^T and p v, full s x s), 8 s d per head in I, none in W.
  const models::Profile& profile = cached_tiny_profile();
  for (const models::LayerMeasurement& m : profile.layers) {
    if (m.layer != "transformer") continue;
    const double tokens = m.tokens(), s = m.seq_len;
    const double linear = 2.0 * (64 * (64 + 2 * 2 * 16) + 64 * 64 + 3 * 64 * 256) * tokens;
    const double attention = 4.0 * s * 16 * 4 * tokens;
    EXPECT_DOUBLE_EQ(m.forward_flops, linear + attention);
    EXPECT_DOUBLE_EQ(m.backward_input_flops, linear + 2 * attention);
    EXPECT_DOUBLE_EQ(m.backward_weight_flops, linear);
  }
}

TEST(Profiler, BytesKeptGrowWithTheMicroBatch) {
  // What a block keeps is per token, plus the b x heads x s x s softmax:
  // twice the micro-batch keeps exactly twice the bytes.
  const models::Profile& profile = cached_tiny_profile();
  auto find = [&](int b, int s) {
    for (const models::LayerMeasurement& m : profile.layers) {
      if (m.layer == "transformer" && m.micro_batch_size == b && m.seq_len == s) return m;
    }
    return models::LayerMeasurement{};
  };
  EXPECT_EQ(find(2, 32).activation_bytes, 2 * find(1, 32).activation_bytes);
  EXPECT_EQ(find(2, 16).weight_grad_bytes, 2 * find(1, 16).weight_grad_bytes);
}

TEST(ProfileFile, RoundTripsThroughYaml) {
  models::Profile profile = cached_tiny_profile();
  profile.links = models::LinkProfile{"mpi", {{1024, {1e-6, 9e-7, 2e-6, 10}, 1.024e9, 1.024e9}}, 5e-7, 8e9};
  const std::string path = write_temp("profile.yaml", models::write_profile_yaml(profile));
  const models::Profile back = models::read_profile_yaml(path);
  EXPECT_EQ(back.device, profile.device);
  EXPECT_EQ(back.date, profile.date);
  // The CPU backend names the library its layers ran on.
  EXPECT_EQ(profile.software.rfind("Eigen 3.", 0), 0u) << profile.software;
  EXPECT_EQ(back.software, profile.software);
  EXPECT_EQ(back.model, "tiny");
  ASSERT_EQ(back.layers.size(), profile.layers.size());
  for (std::size_t i = 0; i < back.layers.size(); ++i) {
    EXPECT_EQ(back.layers[i].layer, profile.layers[i].layer);
    EXPECT_EQ(back.layers[i].activation_bytes, profile.layers[i].activation_bytes);
    EXPECT_EQ(back.layers[i].weight_grad_bytes, profile.layers[i].weight_grad_bytes);
    EXPECT_DOUBLE_EQ(back.layers[i].forward.median_s, profile.layers[i].forward.median_s);
    EXPECT_DOUBLE_EQ(back.layers[i].backward_weight.max_s, profile.layers[i].backward_weight.max_s);
    EXPECT_DOUBLE_EQ(back.layers[i].backward_input_flops, profile.layers[i].backward_input_flops);
  }
  // A profile written before the field reads with none.
  profile.software.clear();
  EXPECT_EQ(models::read_profile_yaml(write_temp("old-profile.yaml", models::write_profile_yaml(profile))).software,
            "");
  ASSERT_TRUE(back.links.has_value());
  EXPECT_EQ(back.links->sizes.at(0).bytes, 1024);
  EXPECT_DOUBLE_EQ(back.links->bandwidth_bytes_per_s, 8e9);
  EXPECT_DOUBLE_EQ(back.links->latency_s, 5e-7);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ProfileFile, AnotherSchemaVersionIsRefusedNamingBoth) {
  const std::string yaml = replaced(models::write_profile_yaml(cached_tiny_profile()), "schema: 1", "schema: 7");
  try {
    models::read_profile_yaml(write_temp("schema7.yaml", yaml));
    FAIL() << "schema 7 was accepted";
  } catch (const ParseError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("7"), std::string::npos) << message;
    EXPECT_NE(message.find("1"), std::string::npos) << message;
  }
}

TEST(ProfileFile, AnUnknownLayerKindIsRefused) {
  const std::string yaml =
      replaced(models::write_profile_yaml(cached_tiny_profile()), "layer: transformer", "layer: moe");
  try {
    models::read_profile_yaml(write_temp("moe.yaml", yaml));
    FAIL() << "an unknown layer kind was accepted";
  } catch (const ParseError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown layer kind 'moe'"), std::string::npos) << error.what();
  }
}

TEST(LinkFit, RecoversLatencyAndBandwidthOfExactLines) {
  models::LinkProfile links;
  for (std::int64_t bytes = 8; bytes <= (64 << 20); bytes *= 4) {
    const double seconds = 2e-6 + static_cast<double>(bytes) / 12e9;
    links.sizes.push_back({bytes, {seconds, seconds, seconds, 1}, 0, 0});
  }
  models::fit_link(links);
  EXPECT_NEAR(links.latency_s, 2e-6, 1e-12);
  EXPECT_NEAR(links.bandwidth_bytes_per_s, 12e9, 1e3);
}

TEST(MemoryProbe, CountsAllocationsThroughTheAllocator) {
  ASSERT_TRUE(heap_accounting_active()) << "the test binary must link with the allocator wrapping";
  const MemoryProbe probe;
  {
    std::vector<char> block(8 << 20, 1);
    EXPECT_GE(probe.now_above_start(), 8 << 20);
  }
  EXPECT_LT(probe.now_above_start(), 1 << 20);
  EXPECT_GE(probe.peak_above_start(), 8 << 20);
}

TEST(ProfileCosts, MeasuredEntriesReplaceTheAnalyticalOnes) {
  // Simulating tiny on 2 ranks, 1F1B, with the profile: every rank's busy
  // time is m x the sum over its layers of the measured F + I + W (the
  // shape b = 2, s = 32 was measured, so nothing is interpolated).
  const models::Profile& profile = cached_tiny_profile();
  const models::ModelConfig tiny = models::load_model("tiny");
  step::PipelineSetup setup;
  setup.shape.micro_batch_size = 2;
  setup.shape.seq_len = 32;
  setup.pp = 2;
  setup.microbatches = 4;
  setup.schedule = "1F1B";
  setup.profile = &profile;
  setup.profile_file = "tiny.yaml";
  setup.model_name = "tiny";
  const step::ModelSimulation simulation =
      step::simulate_model(models::expand_layers(tiny, setup.shape), models::load_hardware("cpu"), setup);
  double per_kind[3] = {0, 0, 0};
  for (const models::LayerMeasurement& m : profile.layers) {
    if (m.micro_batch_size != 2 || m.seq_len != 32) continue;
    const int kind = m.layer == "embedding" ? 0 : (m.layer == "transformer" ? 1 : 2);
    per_kind[kind] = m.forward.median_s + m.backward_input.median_s + m.backward_weight.median_s;
  }
  // Even split of 4 blocks: embedding + 2 blocks, then 2 blocks + output.
  const double rank0 = 4 * (per_kind[0] + 2 * per_kind[1]);
  const double rank1 = 4 * (2 * per_kind[1] + per_kind[2]);
  EXPECT_NEAR(simulation.report.ranks_detail[0].busy_s, rank0, 1e-9 * rank0);
  EXPECT_NEAR(simulation.report.ranks_detail[1].busy_s, rank1, 1e-9 * rank1);
  EXPECT_NE(simulation.cost_source.find("profile tiny.yaml"), std::string::npos) << simulation.cost_source;
}

TEST(ProfileCosts, OtherShapesAreInterpolatedAndSaySo) {
  models::ModelConfig tiny = models::load_model("tiny");
  models::TrainingShape shape;
  shape.micro_batch_size = 3;  // between nothing: extrapolated from 1 and 2
  shape.seq_len = 32;
  models::ModelLayers layers = models::expand_layers(tiny, shape);
  const step::ProfiledCosts costs =
      step::apply_profile(cached_tiny_profile(), "tiny", shape, models::load_hardware("cpu"), layers);
  ASSERT_FALSE(costs.notes.empty());
  EXPECT_NE(costs.notes.front().find("extrapolat"), std::string::npos) << costs.notes.front();
}

TEST(ProfileCosts, AProfileOfAnotherModelIsRefused) {
  models::ModelConfig model = models::load_model("llama3-8b");
  models::TrainingShape shape;
  models::ModelLayers layers = models::expand_layers(model, shape);
  EXPECT_THROW(step::apply_profile(cached_tiny_profile(), "llama3-8b", shape, models::load_hardware("cpu"), layers),
               InputError);
}

TEST(Profiler, RefusesWhatItCannotRun) {
  ProfileRequest request;
  request.model = models::load_model("tiny");
  request.seq_lens = {0};
  EXPECT_THROW(profile_layers_cpu(request), InputError);
  request.seq_lens = {1 << 30};  // the softmax alone would need exabytes
  try {
    profile_layers_cpu(request);
    FAIL() << "an impossible size was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--seq"), std::string::npos) << error.what();
  }
  request.seq_lens = {16};
  request.model = models::load_model("mixtral-8x7b");
  EXPECT_THROW(profile_layers_cpu(request), InputError);
}

}  // namespace
}  // namespace pipeplan::profiler
