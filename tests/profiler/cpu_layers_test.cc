// The CPU backend's layers: the split backward (I then W, W deferred)
// against the fused order, held bytes against the stored tensors counted
// by hand, FLOPs, and building the zoo's tiny model. Finite differences
// are in cpu_layers_gradient_test.cc.
#include "common/error.h"
#include "tests/support/cpu_layers_support.h"

namespace pipeplan::profiler {
namespace {

using namespace pipeplan::profiler::layer_test;

// ---------------------------------------------------------------------------
// The split backward.

// max |a - b| over the largest |a|: 0 for identical tensors.
double relative_difference(const Matrix& a, const Matrix& b) {
  const double scale = a.cwiseAbs().maxCoeff();
  return scale == 0 ? (b.cwiseAbs().maxCoeff() == 0 ? 0.0 : 1.0) : (a - b).cwiseAbs().maxCoeff() / scale;
}

// Reference: F, I, W of each micro-batch back to back. Split: F0 F1 I0 F2
// I1 W1 I2 W0 W2, W deferred past other micro-batches' passes and run out
// of order. Gradients must agree within 1e-6 relative (they are in fact
// equal: each W adds its micro-batch's whole contribution at once).
void check_split_backward(const RunSetup& setup) {
  Layers reference = build_all(setup);
  std::vector<Matrix> reference_inputs;
  for (int mb = 0; mb < 3; ++mb) {
    forward_all(reference, setup, mb);
    reference_inputs.push_back(backward_input_all(reference, mb));
    backward_weight_all(reference, mb);
  }
  Layers split = build_all(setup);
  std::vector<Matrix> split_inputs(3);
  forward_all(split, setup, 0);
  forward_all(split, setup, 1);
  split_inputs[0] = backward_input_all(split, 0);
  forward_all(split, setup, 2);
  split_inputs[1] = backward_input_all(split, 1);
  backward_weight_all(split, 1);
  split_inputs[2] = backward_input_all(split, 2);
  backward_weight_all(split, 0);
  backward_weight_all(split, 2);
  for (int mb = 0; mb < 3; ++mb) {
    EXPECT_LE(relative_difference(reference_inputs[mb], split_inputs[mb]), 1e-6) << "micro-batch " << mb;
  }
  const std::vector<Matrix> expected = all_gradients(reference);
  const std::vector<Matrix> actual = all_gradients(split);
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_GT(expected[i].cwiseAbs().maxCoeff(), 0.0f) << "parameter " << i;
    EXPECT_LE(relative_difference(expected[i], actual[i]), 1e-6) << "parameter " << i;
  }
}

TEST(CpuLayersSplitBackward, DeferredWeightPassesGiveTheSameGradients) {
  check_split_backward({small_llama(), shape_of(2, 5), 3});
  check_split_backward({small_gpt(), shape_of(2, 5), 3});
}

TEST(CpuLayersSplitBackward, PassesOutOfOrderThrow) {
  Layers layers = build_cpu_layers(small_llama(), shape_of(2, 5), 1, 3);
  const Matrix input = Matrix::Ones(10, 16);
  EXPECT_THROW(layers[0]->backward_input(0, input), std::logic_error);
  layers[0]->forward(0, input);
  EXPECT_THROW(layers[0]->forward(0, input), std::logic_error);
  EXPECT_THROW(layers[0]->backward_weight(0), std::logic_error);
  EXPECT_THROW(layers[1]->forward(0, Matrix::Ones(10, 15)), std::invalid_argument);
  EXPECT_THROW(layers[1]->forward(0, Matrix::Ones(9, 16)), std::invalid_argument);  // not whole sequences
}

// ---------------------------------------------------------------------------
// Held bytes and FLOPs, small Llama-style config: t = b s = 10 tokens.

constexpr std::int64_t kT = 10, kH = 16, kContext = 2 * 8, kQkv = (2 + 2 * 1) * 8, kFfn = 32, kFloat = 4;

Matrix pattern(Eigen::Index rows, Eigen::Index cols) {
  return Matrix::NullaryExpr(rows, cols, [](Eigen::Index i, Eigen::Index j) { return std::sin(0.7f * i + 1.3f * j); });
}

// A change at the last position of sequence 0 reaches no earlier row and
// not the other sequence.
TEST(CpuLayersBlock, AnMlpWithoutAMeasuredLayerIsRefused) {
  // Squared ReLU (Nemotron-4) is costed by the model but has no CPU layer:
  // refused rather than measured as GELU.
  models::ModelConfig model = small_gpt();
  model.mlp = models::MlpKind::kSquaredRelu;
  EXPECT_THROW(build_cpu_layers(model, shape_of(2, 5), 1, 2), InputError);
}

TEST(CpuLayersBlock, AttentionIsCausal) {
  Layers layers = build_cpu_layers(small_llama(), shape_of(2, 5), 1, 2);
  Matrix input = pattern(kT, kH);
  const Matrix before = layers[0]->forward(0, input);
  input.row(4).array() += 1.0f;
  const Matrix after = layers[0]->forward(1, input);
  EXPECT_EQ(before.topRows(4), after.topRows(4));
  EXPECT_NE(before.row(4), after.row(4));
  EXPECT_EQ(before.bottomRows(5), after.bottomRows(5));
}

// q = k at every position and v = the position: without RoPE every score
// is equal, so row i averages v over 0..i; RoPE makes the scores depend on
// the distance.
TEST(CpuLayersBlock, RopeRotatesQueriesAndKeys) {
  const AttentionShape shape{1, 1, 8, 5, false};
  Matrix qkv = pattern(1, 24).replicate(5, 1);
  for (int position = 0; position < 5; ++position) qkv.row(position).tail(8).setConstant(position);
  const Matrix plain = AttentionCore("plain", shape).forward(0, qkv);
  const Matrix rotated = AttentionCore("rotated", {1, 1, 8, 5, true}).forward(0, qkv);
  EXPECT_FLOAT_EQ(plain(4, 0), 2.0f);  // (0 + 1 + 2 + 3 + 4) / 5
  EXPECT_FLOAT_EQ(rotated(0, 0), 0.0f);
  EXPECT_GT(std::abs(rotated(4, 0) - 2.0f), 1e-3f);
}

TEST(CpuLayersMemory, BlockHoldsExactlyItsStoredTensors) {
  Layers layers = build_cpu_layers(small_llama(), shape_of(2, 5), 1, 2);
  Layer& block = *layers[0];
  const std::int64_t scores = 2 * 2 * 5 * 5;   // b x heads x s x s softmax
  const std::int64_t forward = (kT * kH + kT)  // attention.norm: normalised input, 1/std per row
                               + kT * kH                 // qkv: its input
                               + kT * kQkv + scores      // core: q|k|v (q, k rotated), softmax
                               + kT * kContext           // proj: its input, the context
                               + (kT * kH + kT)          // mlp.norm
                               + kT * kH                 // fc1: its input
                               + kT * 2 * kFfn           // SwiGLU: gate|up
                               + kT * kFfn;              // fc2: its input
  ASSERT_EQ(forward, 2200);
  // After I: each norm keeps its normalised input and dy; each linear its
  // input and dy; the core and the activation keep nothing.
  const std::int64_t after_input = 2 * kT * kH + (kT * kH + kT * kQkv) + (kT * kContext + kT * kH) + 2 * kT * kH +
                                   (kT * kH + kT * 2 * kFfn) + (kT * kFfn + kT * kH);
  ASSERT_EQ(after_input, 2720);
  EXPECT_EQ(block.held_bytes(0), 0);
  block.forward(0, pattern(kT, kH));
  EXPECT_EQ(block.held_bytes(0), forward * kFloat);
  block.backward_input(0, pattern(kT, kH));
  EXPECT_EQ(block.held_bytes(0), after_input * kFloat);
  block.backward_weight(0);
  EXPECT_EQ(block.held_bytes(0), 0);
}

// At s = 64 the softmax outweighs the dy stashes: I frees more than it keeps.
TEST(CpuLayersMemory, BackwardInputFreesTheScores) {
  Layers layers = build_cpu_layers(small_llama(), shape_of(1, 64), 1, 2);
  Layer& block = *layers[0];
  block.forward(3, pattern(64, kH));
  const std::int64_t after_forward = block.held_bytes(3);
  EXPECT_EQ(after_forward, (210 * 64 + 2 * 64 * 64) * kFloat);  // 210 t + heads s t floats
  block.backward_input(3, pattern(64, kH));
  EXPECT_GT(block.held_bytes(3), 0);
  EXPECT_LT(block.held_bytes(3), after_forward);
  block.backward_weight(3);
  EXPECT_EQ(block.held_bytes(3), 0);
}

TEST(CpuLayersMemory, EdgeLayersHoldTokensSoftmaxAndStashes) {
  const RunSetup setup{small_llama()};
  Layers layers = build_all(setup);
  Layer& embedding = *layers.front();
  Layer& output = *layers.back();
  const std::int64_t vocab = 37;
  embedding.forward(0, sample_tokens(setup.model, setup.shape, 0, setup.seed));
  EXPECT_EQ(embedding.held_bytes(0), kT * kFloat);  // the token ids
  EXPECT_EQ(embedding.backward_input(0, pattern(kT, kH)).size(), 0);
  EXPECT_EQ(embedding.held_bytes(0), (kT + kT * kH) * kFloat);
  embedding.backward_weight(0);
  EXPECT_EQ(embedding.held_bytes(0), 0);

  set_targets(output, 0, sample_targets(setup.model, setup.shape, 0, setup.seed));
  EXPECT_EQ(output.held_bytes(0), kT * kFloat);  // the targets
  output.forward(0, pattern(kT, kH));
  // targets, softmax, norm (normalised input, 1/std), head input
  EXPECT_EQ(output.held_bytes(0), (kT + kT * vocab + kT * kH + kT + kT * kH) * kFloat);
  output.backward_input(0, Matrix());
  // norm (normalised input, dy), head (input, dlogits)
  EXPECT_EQ(output.held_bytes(0), (2 * kT * kH + kT * kH + kT * vocab) * kFloat);
  output.backward_weight(0);
  EXPECT_EQ(output.held_bytes(0), 0);
}

TEST(CpuLayersFlops, EachPassCountsItsMatrixProducts) {
  Layers layers = build_cpu_layers(small_llama(), shape_of(2, 5), 1, 4);
  const Layer& block = *layers[0];
  const double linear = 2.0 * kT * (kH * kQkv + kContext * kH + kH * 2 * kFfn + kFfn * kH);
  const double attention = 2 * (2.0 * kT * 5 * kContext);  // q k^T and p v: 2 s^2 d per sequence and head
  EXPECT_DOUBLE_EQ(block.forward_flops(kT), linear + attention);
  EXPECT_DOUBLE_EQ(block.backward_input_flops(kT), linear + 2 * attention);
  EXPECT_DOUBLE_EQ(block.backward_weight_flops(kT), linear);
  const Layer& output = *layers[2];
  for (double flops : {output.forward_flops(kT), output.backward_input_flops(kT), output.backward_weight_flops(kT)}) {
    EXPECT_DOUBLE_EQ(flops, 2.0 * kT * kH * 37);
  }
}

// ---------------------------------------------------------------------------
// Building models.

TEST(CpuLayersModel, TinyModelRunsWithLossNearLogVocab) {
  const RunSetup setup{models::load_model("tiny"), shape_of(2, 16), 2, 7};
  Layers layers = build_all(setup);
  ASSERT_EQ(layers.size(), static_cast<std::size_t>(setup.model.layers + 2));
  for (int mb = 0; mb < 2; ++mb) {
    const float loss = forward_all(layers, setup, mb);
    EXPECT_TRUE(std::isfinite(loss));
    // Small weights give near-uniform logits at init: loss ~ log(512) = 6.24.
    EXPECT_NEAR(loss, std::log(512.0), 0.05);
  }
  for (int mb = 0; mb < 2; ++mb) EXPECT_TRUE(backward_input_all(layers, mb).allFinite());
  for (int mb = 0; mb < 2; ++mb) backward_weight_all(layers, mb);
  for (auto& layer : layers) {
    for (int mb = 0; mb < 2; ++mb) EXPECT_EQ(layer->held_bytes(mb), 0);
  }
  for (const Matrix& gradient : all_gradients(layers)) {
    EXPECT_TRUE(gradient.allFinite());
    EXPECT_GT(gradient.cwiseAbs().maxCoeff(), 0.0f);
  }
}

bool same_weights(Layer& a, Layer& b) {
  const std::vector<Parameter> x = a.parameters();
  const std::vector<Parameter> y = b.parameters();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].name != y[i].name || *x[i].value != *y[i].value) return false;
  }
  return true;
}

TEST(CpuLayersModel, ALayerIndexAlwaysGetsTheSameWeights) {
  const models::ModelConfig tiny = models::load_model("tiny");
  const models::TrainingShape shape = shape_of(1, 8);
  Layers whole = build_cpu_layers(tiny, shape, 0, tiny.layers + 2, {5, 1});
  Layers alone = build_cpu_layers(tiny, shape, 2, 3, {5, 4});
  Layers output = build_cpu_layers(tiny, shape, tiny.layers + 1, tiny.layers + 2, {5, 1});
  EXPECT_TRUE(same_weights(*whole[2], *alone[0]));
  EXPECT_TRUE(same_weights(*whole.back(), *output[0]));
  EXPECT_FALSE(same_weights(*whole[1], *alone[0]));  // another index
  Layers reseeded = build_cpu_layers(tiny, shape, 2, 3, {6, 1});
  EXPECT_FALSE(same_weights(*reseeded[0], *alone[0]));
}

void expect_input_error(const models::ModelConfig& model, const models::TrainingShape& shape, int end,
                        const std::string& needle) {
  try {
    build_cpu_layers(model, shape, 0, end);
    ADD_FAILURE() << "no error for " << needle;
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(CpuLayersModel, RejectsWhatTheCpuBackendDoesNotRun) {
  const models::ModelConfig tiny = models::load_model("tiny");
  models::TrainingShape tp2 = shape_of(1, 8);
  tp2.tp = 2;
  expect_input_error(tiny, tp2, 1, "the cpu backend runs without tensor parallelism; use --tp 1");
  expect_input_error(models::load_model("mixtral-8x7b"), shape_of(1, 8), 1, "layer kind 'moe'");
  expect_input_error(models::load_model("deepseek-v3"), shape_of(1, 8), 1, "layer kind 'mla'");
  models::ModelConfig uneven = small_llama();
  uneven.kv_heads = 3;
  expect_input_error(uneven, shape_of(1, 8), 1, "kv_heads (3) must divide heads (2)");
  expect_input_error(small_gpt(), shape_of(1, 8), 1, "exceeds the 7 learned positions");
  expect_input_error(tiny, shape_of(1, 8), tiny.layers + 3, "outside model 'tiny'");
}

TEST(CpuLayersModel, SampleTargetsAreTheNextTokens) {
  const models::ModelConfig model = small_llama();
  const models::TrainingShape shape = shape_of(3, 6);
  const Matrix tokens = sample_tokens(model, shape, 4, 11);
  const std::vector<int> targets = sample_targets(model, shape, 4, 11);
  ASSERT_EQ(tokens.rows(), 18);
  ASSERT_EQ(targets.size(), 18u);
  for (int row = 0; row < 18; ++row) {
    EXPECT_TRUE(tokens(row, 0) >= 0 && tokens(row, 0) < 37 && tokens(row, 0) == std::floor(tokens(row, 0)));
    EXPECT_TRUE(targets[row] >= 0 && targets[row] < 37);
    // The next token of the same sequence (the last one's is drawn apart).
    EXPECT_TRUE(row % 6 == 5 || targets[row] == tokens(row + 1, 0)) << "row " << row;
  }
  EXPECT_EQ(sample_tokens(model, shape, 4, 11), tokens);
  EXPECT_NE(sample_tokens(model, shape, 5, 11), tokens);
  EXPECT_NE(sample_tokens(model, shape, 4, 12), tokens);
}

}  // namespace
}  // namespace pipeplan::profiler
