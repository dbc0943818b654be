// The CPU backend's layers: analytic gradients of whole small models
// (Llama- and GPT-style) against central finite differences.
#include "tests/support/cpu_layers_support.h"

namespace pipeplan::profiler {
namespace {

using namespace pipeplan::profiler::layer_test;

// ---------------------------------------------------------------------------
// Finite differences.

// At the 0.02 initialisation the weight gradients are so small that fp32
// rounding of the loss would swamp a finite difference; larger weights give
// gradients of order 1e-2..1e-1 and push every nonlinearity out of its
// linear regime.
Layers build_spread(const RunSetup& setup) {
  Layers layers = build_all(setup);
  std::mt19937 engine(2024);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const Parameter& parameter : all_parameters(layers)) {
    const bool gamma = parameter.name.ends_with("gamma");
    const bool shift = parameter.name.ends_with("beta") || parameter.name.ends_with("bias");
    for (float& value : parameter.value->reshaped()) {
      value = gamma ? 1 + 0.2f * uniform(engine) : (shift ? 0.1f : 0.3f) * uniform(engine);
    }
  }
  return layers;
}

// One entry: of parameter tensor `parameter`, or else of block 0's input
// in micro-batch 0 (the other micro-batch's input gradient is the same
// function of its own input).
struct Entry {
  std::optional<std::size_t> parameter;
  Eigen::Index index = 0;  // flat, row-major
};

// The total loss (sum over micro-batches of loss / microbatches) with the
// entry moved by delta, and the step that took in fp32.
std::pair<double, double> nudged_loss(const RunSetup& setup, const Entry& entry, float delta) {
  Layers layers = build_spread(setup);
  double step = 0;
  const auto move = [&](float& value) {
    const float before = value;
    value += delta;
    step = static_cast<double>(value) - before;
  };
  if (entry.parameter) move(all_parameters(layers)[*entry.parameter].value->data()[entry.index]);
  double loss = 0;
  for (int mb = 0; mb < setup.microbatches; ++mb) {
    loss += forward_all(layers, setup, mb, [&](Matrix& block_input) {
      if (!entry.parameter && mb == 0) move(block_input.data()[entry.index]);
    }) / static_cast<double>(setup.microbatches);
  }
  return {loss, step};
}

double central_difference(const RunSetup& setup, const Entry& entry) {
  const auto [up, up_step] = nudged_loss(setup, entry, 1e-2f);
  const auto [down, down_step] = nudged_loss(setup, entry, -1e-2f);
  return (up - down) / (up_step - down_step);
}

// Checked entries: the largest in magnitude, where a relative error means
// most, and two more spread over the tensor.
std::vector<Eigen::Index> probe_entries(const Matrix& gradient) {
  Eigen::Index row = 0, col = 0;
  gradient.cwiseAbs().maxCoeff(&row, &col);
  return {row * gradient.cols() + col, gradient.size() / 3, gradient.size() - 1};
}

// Tolerance: 1e-2 relative. The layers run in fp32, so the loss (about 3.6
// here) carries ~1e-6 of rounding, which a central difference over 2 x 1e-2
// turns into ~1e-4 of noise; the step adds a truncation error of order
// step^2 times the third derivative. Measured errors stay below 2e-3 (the
// block inputs, the most curved direction), while a wrong or missing term
// is of the order of the entry itself. Entries near zero are held to 1e-2
// of their tensor's largest entry instead.
void expect_close(double numeric, double analytic, double scale, const std::string& what) {
  EXPECT_NEAR(numeric, analytic, 1e-2 * std::max(std::abs(analytic), scale))
      << what << ": finite difference " << numeric << ", analytic " << analytic;
}

// `tensors`: the parameter tensors the model must have, all of them checked.
void check_finite_differences(const RunSetup& setup, std::size_t tensors) {
  Layers layers = build_spread(setup);
  for (int mb = 0; mb < setup.microbatches; ++mb) forward_all(layers, setup, mb);
  const Matrix input_gradient = backward_input_all(layers, 0);
  for (int mb = 1; mb < setup.microbatches; ++mb) backward_input_all(layers, mb);
  for (int mb = 0; mb < setup.microbatches; ++mb) backward_weight_all(layers, mb);
  const std::vector<Parameter> parameters = all_parameters(layers);
  ASSERT_EQ(parameters.size(), tensors);
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    const Matrix& gradient = *parameters[p].gradient;
    const double scale = gradient.cwiseAbs().maxCoeff();
    ASSERT_GT(scale, 0.0) << parameters[p].name << " has no gradient";
    for (const Eigen::Index index : probe_entries(gradient)) {
      const double numeric = central_difference(setup, {p, index});
      expect_close(numeric, gradient.data()[index], scale, fmt::format("layer {}[{}]", parameters[p].name, index));
    }
  }
  for (const Eigen::Index index : probe_entries(input_gradient)) {
    const double numeric = central_difference(setup, {std::nullopt, index});
    expect_close(numeric, input_gradient.data()[index], input_gradient.cwiseAbs().maxCoeff(),
                 fmt::format("block 0 input [{}]", index));
  }
}

// Embedding table; per block attention.norm.gamma, attention.qkv.weight,
// attention.proj.weight, mlp.norm.gamma, mlp.fc1.weight, mlp.fc2.weight;
// output norm.gamma and head.weight.
TEST(CpuLayersGradients, LlamaStyleMatchesFiniteDifferences) {
  check_finite_differences({small_llama()}, 1 + 2 * 6 + 2);
}

// Table and positions; per block each norm with beta, each linear with a
// bias; output norm gamma, beta and head weight (no bias).
TEST(CpuLayersGradients, GptStyleMatchesFiniteDifferences) { check_finite_differences({small_gpt()}, 2 + 2 * 12 + 3); }

}  // namespace
}  // namespace pipeplan::profiler
