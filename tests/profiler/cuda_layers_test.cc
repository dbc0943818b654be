// The CUDA backend (bf16 on a GPU) against the CPU backend (fp32): each
// layer kind's forward output, input gradient and weight gradients for the
// same weights and inputs; the bytes each pass keeps against the allocator's
// count (the profile and the link sweep: cuda_profile_test.cc). Tests that need a GPU skip
// themselves where none is found; the refusals without one run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/backends.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/model_builder.h"
#include "profiler/cuda/bf16.h"
#include "profiler/cuda/cuda_model_builder.h"
#include "profiler/cuda/device_context.h"
#include "profiler/cuda/device_layer.h"
#include "profiler/cuda/device_memory.h"
#include "profiler/cuda/device_tensor.h"
#include "tests/support/cuda_test_support.h"

namespace pipeplan::profiler {
namespace {

using CpuLayers = std::vector<std::unique_ptr<Layer>>;
using testing::shape_of;
using testing::tiny;
using GpuLayers = std::vector<std::unique_ptr<DeviceLayer>>;

// The same sizes GPT-style: LayerNorm, GELU, learned positions, biases,
// one key/value head per query head.
models::ModelConfig tiny_gpt() {
  models::ModelConfig model = tiny();
  model.name = "tiny-gpt";
  model.kv_heads = model.heads;
  model.norm = models::NormKind::kLayerNorm;
  model.mlp = models::MlpKind::kGelu;
  model.position = models::PositionEmbedding::kLearned;
  model.biases = true;
  return model;
}

Matrix rounded_to_bf16(Matrix matrix) {
  for (float& value : matrix.reshaped()) value = round_to_bf16(value);
  return matrix;
}

Matrix random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Matrix matrix(rows, cols);
  for (float& value : matrix.reshaped()) value = round_to_bf16(uniform(engine));
  return matrix;
}

// ||actual - expected|| / ||expected||, Frobenius norms.
double relative_error(const Matrix& actual, const Matrix& expected) {
  const double norm = expected.norm();
  return norm == 0 ? actual.norm() : (actual - expected).norm() / norm;
}

// Tolerance: 3e-2 of the reference's norm. The two backends share their
// weights and inputs exactly (both rounded to bf16 first), so what differs
// is the GPU rounding every tensor it stores between kernels to bf16, 8
// significant bits: 2^-9 = 0.2% per rounding at most. A block stores about
// ten intermediates on the way from input to output (and as many back),
// each rounding adding mostly independent errors that the next layers carry
// on, so we expect 0.5-1.5% normwise; fp32 accumulation inside the GEMMs,
// norms and softmaxes adds nothing comparable. A wrong or missing term
// (a sign, a transposed head, a lost residual or rotary rotation) moves the
// result by tens of percent: the gap between the two is what the bound uses.
constexpr double kTolerance = 3e-2;

void expect_close(const Matrix& actual, const Matrix& expected, const std::string& what) {
  ASSERT_EQ(actual.rows(), expected.rows()) << what;
  ASSERT_EQ(actual.cols(), expected.cols()) << what;
  ASSERT_GT(expected.norm(), 0.0) << what << " is zero: the comparison would prove nothing";
  EXPECT_LT(relative_error(actual, expected), kTolerance) << what;
}

// One layer on both backends with the same weights. The drawn weights are
// replaced by larger ones (as the CPU tests' finite differences do): at
// the 0.02 initialisation a block's branches are tiny beside its residual
// path, and the comparison would barely see them. Weights of fan-in n are
// uniform in +-sqrt(3 / n), so activations keep unit variance; gains near
// 1, shifts near 0.
struct LayerPair {
  CpuLayers cpu;
  GpuLayers gpu;
};

LayerPair build_pair(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model,
                     const models::TrainingShape& shape, int index, int microbatches) {
  LayerPair pair{build_cpu_layers(model, shape, index, index + 1, {7, microbatches}),
                 build_cuda_layers(context, model, shape, index, index + 1, {7, microbatches})};
  std::vector<Parameter> cpu = pair.cpu.front()->parameters();
  std::vector<DeviceParameter> gpu = pair.gpu.front()->parameters();
  EXPECT_EQ(cpu.size(), gpu.size());
  std::mt19937 engine(2024 + index);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (std::size_t i = 0; i < std::min(cpu.size(), gpu.size()); ++i) {
    EXPECT_EQ(cpu[i].name, gpu[i].name);
    const bool gain = cpu[i].name.ends_with("gamma");
    const bool shift = cpu[i].name.ends_with("beta") || cpu[i].name.ends_with("bias");
    const bool table = index == 0;  // rows are looked up, not multiplied
    const float scale = std::sqrt(3.0f / static_cast<float>(cpu[i].value->cols()));
    for (float& value : cpu[i].value->reshaped()) {
      const float u = uniform(engine);
      value = round_to_bf16(gain ? 1 + 0.2f * u : shift ? 0.1f * u : table ? u : scale * u);
    }
    upload(*cpu[i].value, *gpu[i].value);
  }
  return pair;
}

// Two micro-batches: on the CPU one after the other (F I W, F I W); on the
// GPU interleaved as a pipeline schedule runs them (F0 F1 I1 I0 W0 W1).
struct Passes {
  std::vector<Matrix> outputs;
  std::vector<Matrix> input_gradients;
  std::vector<Matrix> weight_gradients;
};

struct Inputs {
  std::vector<Matrix> inputs;             // token ids for the embedding
  std::vector<Matrix> grads;              // unused by the output layer
  std::vector<std::vector<int>> targets;  // the output layer's only
};

Passes run_cpu(Layer& layer, const Inputs& in) {
  Passes passes;
  for (int mb = 0; mb < 2; ++mb) {
    if (!in.targets.empty()) set_targets(layer, mb, in.targets[mb]);
    passes.outputs.push_back(layer.forward(mb, in.inputs[mb]));
    passes.input_gradients.push_back(layer.backward_input(mb, in.grads[mb]));
    layer.backward_weight(mb);
  }
  for (const Parameter& parameter : layer.parameters()) passes.weight_gradients.push_back(*parameter.gradient);
  return passes;
}

Passes run_gpu(DeviceLayer& layer, const Inputs& in, const std::shared_ptr<DeviceContext>& context) {
  Passes passes;
  passes.outputs.resize(2);
  passes.input_gradients.resize(2);
  const DType input_type = in.inputs[0].cols() == 1 ? DType::kF32 : DType::kBf16;  // token ids, or activations
  for (int mb = 0; mb < 2; ++mb) {
    if (!in.targets.empty()) set_device_targets(layer, mb, in.targets[mb]);
    passes.outputs[mb] = to_host(layer.forward(mb, to_device(context, in.inputs[mb], input_type)));
  }
  for (int mb : {1, 0}) {
    passes.input_gradients[mb] = to_host(layer.backward_input(mb, to_device(context, in.grads[mb], DType::kBf16)));
  }
  for (int mb : {0, 1}) layer.backward_weight(mb);
  for (const DeviceParameter& parameter : layer.parameters()) {
    passes.weight_gradients.push_back(to_host(*parameter.gradient));
  }
  return passes;
}

Inputs inputs_for(const models::ModelConfig& model, const models::TrainingShape& shape, int index) {
  Inputs in;
  const int tokens = shape.micro_batch_size * shape.seq_len;
  for (int mb = 0; mb < 2; ++mb) {
    in.inputs.push_back(index == 0 ? sample_tokens(model, shape, mb, 7) : random_matrix(tokens, model.hidden, 10 + mb));
    in.grads.push_back(random_matrix(tokens, model.hidden, 20 + mb));
    if (index == model.layers + 1) in.targets.push_back(sample_targets(model, shape, mb, 7));
  }
  return in;
}

void compare_layer(const models::ModelConfig& model, int index) {
  auto context = std::make_shared<DeviceContext>(0);
  const models::TrainingShape shape = shape_of(2, 16);
  LayerPair pair = build_pair(context, model, shape, index, 2);
  const Inputs in = inputs_for(model, shape, index);
  const Passes expected = run_cpu(*pair.cpu.front(), in);
  const Passes actual = run_gpu(*pair.gpu.front(), in, context);
  const bool output_layer = index == model.layers + 1;
  for (int mb = 0; mb < 2; ++mb) {
    const std::string where = model.name + " layer " + std::to_string(index) + " micro-batch " + std::to_string(mb);
    if (output_layer) {
      // The loss: one number, near log(vocab) plus what the spread weights add.
      EXPECT_NEAR(actual.outputs[mb](0, 0), expected.outputs[mb](0, 0), 1e-2 * expected.outputs[mb](0, 0)) << where;
    } else {
      expect_close(actual.outputs[mb], expected.outputs[mb], where + " output");
    }
    if (index == 0) {
      EXPECT_EQ(actual.input_gradients[mb].size(), 0) << where;  // the embedding has no input gradient
    } else {
      expect_close(actual.input_gradients[mb], expected.input_gradients[mb], where + " input gradient");
    }
  }
  const std::vector<Parameter> names = pair.cpu.front()->parameters();
  ASSERT_EQ(actual.weight_gradients.size(), expected.weight_gradients.size());
  for (std::size_t i = 0; i < expected.weight_gradients.size(); ++i) {
    expect_close(actual.weight_gradients[i], expected.weight_gradients[i],
                 model.name + " layer " + std::to_string(index) + " gradient of " + names[i].name);
  }
  for (int mb = 0; mb < 2; ++mb) EXPECT_EQ(pair.gpu.front()->held_bytes(mb), 0);
}

// ---------------------------------------------------------------------------
// Against the CPU backend.

TEST(CudaLayers, EmbeddingMatchesTheCpuBackend) {
  SKIP_WITHOUT_GPU();
  compare_layer(tiny(), 0);
  compare_layer(tiny_gpt(), 0);  // learned positions
}

TEST(CudaLayers, LlamaStyleBlockMatchesTheCpuBackend) {
  SKIP_WITHOUT_GPU();
  compare_layer(tiny(), 1);
  compare_layer(tiny(), 3);
}

TEST(CudaLayers, GptStyleBlockMatchesTheCpuBackend) {
  SKIP_WITHOUT_GPU();
  compare_layer(tiny_gpt(), 2);
}

TEST(CudaLayers, OutputLayerMatchesTheCpuBackend) {
  SKIP_WITHOUT_GPU();
  compare_layer(tiny(), tiny().layers + 1);
  compare_layer(tiny_gpt(), tiny_gpt().layers + 1);
}

// The builder draws exactly the CPU backend's weights, rounded to bf16.
TEST(CudaLayers, BuilderUploadsTheCpuBackendsWeights) {
  SKIP_WITHOUT_GPU();
  auto context = std::make_shared<DeviceContext>(0);
  const models::ModelConfig model = tiny_gpt();
  const models::TrainingShape shape = shape_of(1, 8);
  CpuLayers cpu = build_cpu_layers(model, shape, 0, model.layers + 2, {5, 1});
  GpuLayers gpu = build_cuda_layers(context, model, shape, 0, model.layers + 2, {5, 1});
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t layer = 0; layer < cpu.size(); ++layer) {
    std::vector<Parameter> expected = cpu[layer]->parameters();
    std::vector<DeviceParameter> actual = gpu[layer]->parameters();
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(actual[i].name, expected[i].name);
      EXPECT_EQ(to_host(*actual[i].value), rounded_to_bf16(*expected[i].value)) << expected[i].name;
      EXPECT_EQ(to_host(*actual[i].gradient).norm(), 0.0f) << expected[i].name;
    }
  }
}

// ---------------------------------------------------------------------------
// Memory: what a layer reports holding is what the allocator has handed out.

TEST(CudaLayersMemory, HeldBytesAreTheAllocatorsCount) {
  SKIP_WITHOUT_GPU();
  auto context = std::make_shared<DeviceContext>(0);
  const models::ModelConfig model = tiny();
  const models::TrainingShape shape = shape_of(2, 16);
  GpuLayers layers = build_cuda_layers(context, model, shape, 1, 2);
  DeviceLayer& block = *layers.front();
  const int device = context->device();
  const std::int64_t t = 32, h = 64, qkv = (4 + 2 * 2) * 16, attention = 4 * 16, ffn = 256, bf16 = 2, f32 = 4;
  const std::int64_t probs = 2 * 4 * 16 * 16;  // b x heads x s x s
  // Each norm: its normalised input (bf16) and 1/std (fp32); the linears
  // their inputs; the core q|k|v rotated and the probabilities; SwiGLU gate|up.
  const std::int64_t forward =
      bf16 * (4 * t * h + t * qkv + probs + t * attention + t * 2 * ffn + t * ffn) + f32 * 2 * t;
  // After I: each norm its normalised input and dy; each linear its input and dy.
  const std::int64_t after_input =
      bf16 * (2 * 2 * t * h + (t * h + t * qkv) + (t * attention + t * h) + (t * h + t * 2 * ffn) + (t * ffn + t * h));

  DeviceTensor input = to_device(context, random_matrix(t, h, 1), DType::kBf16);
  DeviceTensor grad = to_device(context, random_matrix(t, h, 2), DType::kBf16);
  const std::int64_t baseline = device_bytes_in_use(device) - input.bytes() - grad.bytes();
  DeviceTensor output = block.forward(0, std::move(input));
  EXPECT_EQ(block.held_bytes(0), forward);
  EXPECT_EQ(device_bytes_in_use(device) - baseline - grad.bytes() - output.bytes(), forward);
  DeviceTensor grad_input = block.backward_input(0, std::move(grad));
  EXPECT_EQ(block.held_bytes(0), after_input);
  EXPECT_EQ(device_bytes_in_use(device) - baseline - output.bytes() - grad_input.bytes(), after_input);
  block.backward_weight(0);
  EXPECT_EQ(block.held_bytes(0), 0);
  EXPECT_EQ(device_bytes_in_use(device) - baseline - output.bytes() - grad_input.bytes(), 0);
}

TEST(CudaLayersMemory, PassesOutOfOrderThrow) {
  SKIP_WITHOUT_GPU();
  auto context = std::make_shared<DeviceContext>(0);
  GpuLayers layers = build_cuda_layers(context, tiny(), shape_of(2, 16), 1, 2);
  auto ones = [&](int rows, int cols) { return to_device(context, Matrix::Ones(rows, cols), DType::kBf16); };
  EXPECT_THROW(layers[0]->backward_input(0, ones(32, 64)), std::logic_error);
  layers[0]->forward(0, ones(32, 64));
  EXPECT_THROW(layers[0]->forward(0, ones(32, 64)), std::logic_error);
  EXPECT_THROW(layers[0]->backward_weight(0), std::logic_error);
  EXPECT_THROW(layers[0]->forward(1, ones(32, 63)), std::invalid_argument);
  EXPECT_THROW(layers[0]->forward(1, ones(31, 64)), std::invalid_argument);  // not whole sequences
}

// ---------------------------------------------------------------------------
// Host-side bf16 conversion (no GPU needed): round to nearest, ties to even.

TEST(CudaBf16, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);                       // a tie: down to the even 1.0
  EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);         // a tie: up to the even neighbour
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // above the tie
  EXPECT_EQ(round_to_bf16(-2.5f), -2.5f);
  EXPECT_EQ(bf16_from_float(1.0f), 0x3f80);
  EXPECT_EQ(float_from_bf16(0xc000), -2.0f);
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace pipeplan::profiler
