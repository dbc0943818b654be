#include "step/profile_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"

namespace pipeplan::step {
namespace {

using models::LayerMeasurement;

struct Estimate {
  models::LayerTimes times;
  double activation_bytes = 0, weight_grad_bytes = 0, working_bytes = 0;
};

Estimate from(const LayerMeasurement& m) {
  return {{m.forward.median_s, m.backward_input.median_s, m.backward_weight.median_s},
          static_cast<double>(m.activation_bytes),
          static_cast<double>(m.weight_grad_bytes),
          static_cast<double>(m.peak_working_bytes)};
}

Estimate blend(const Estimate& a, const Estimate& b, double weight_b) {
  auto mix = [&](double x, double y) { return std::max(0.0, x + (y - x) * weight_b); };
  return {{mix(a.times.forward_s, b.times.forward_s), mix(a.times.backward_input_s, b.times.backward_input_s),
           mix(a.times.backward_weight_s, b.times.backward_weight_s)},
          mix(a.activation_bytes, b.activation_bytes),
          mix(a.weight_grad_bytes, b.weight_grad_bytes),
          mix(a.working_bytes, b.working_bytes)};
}

// Linear in `x` through the two nearest measurements; one alone scales
// proportionally.
Estimate along(std::vector<std::pair<double, const LayerMeasurement*>> points, double x) {
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (points.size() == 1) {
    Estimate e = from(*points.front().second);
    return blend({}, e, x / points.front().first);
  }
  std::size_t upper = 1;
  while (upper + 1 < points.size() && points[upper].first < x) ++upper;
  const auto& [x0, m0] = points[upper - 1];
  const auto& [x1, m1] = points[upper];
  return blend(from(*m0), from(*m1), (x - x0) / (x1 - x0));
}

Estimate estimate(const models::Profile& profile, const std::string& kind, int b, int s,
                  std::vector<std::string>& notes) {
  std::vector<std::pair<double, const LayerMeasurement*>> same_seq, all;
  double lowest = 0, highest = 0;
  for (const LayerMeasurement& m : profile.layers) {
    if (m.layer != kind) continue;
    if (m.micro_batch_size == b && m.seq_len == s) return from(m);
    if (m.seq_len == s) same_seq.emplace_back(m.micro_batch_size, &m);
    all.emplace_back(m.tokens(), &m);
    lowest = lowest == 0 ? m.tokens() : std::min<double>(lowest, m.tokens());
    highest = std::max<double>(highest, m.tokens());
  }
  if (all.empty()) throw InputError(fmt::format("the profile has no '{}' layer; profile the model again", kind));
  const double tokens = static_cast<double>(b) * s;
  const bool outside = tokens < lowest || tokens > highest;
  const std::string how = same_seq.empty() ? "across sequence lengths (in tokens)" : "in the micro-batch size";
  notes.push_back(fmt::format("{} at micro-batch {} x {}: {} {}", kind, b, s, outside ? "extrapolated" : "interpolated",
                              how));
  return same_seq.empty() ? along(all, tokens) : along(same_seq, b);
}

std::string kind_of(const models::LayerCost& layer) {
  switch (layer.kind) {
    case models::LayerKind::kEmbedding: return "embedding";
    case models::LayerKind::kLoss: return "output";
    default: return "transformer";
  }
}

}  // namespace

ProfiledCosts apply_profile(const models::Profile& profile, const std::string& model_name,
                            const models::TrainingShape& shape, const models::HardwareConfig& hardware,
                            models::ModelLayers& layers) {
  if (profile.model != model_name) {
    throw InputError(fmt::format("the profile measured '{}' but the model is '{}'; profile this model", profile.model,
                                 model_name));
  }
  if (profile.tp != shape.tp) {
    throw InputError(fmt::format("the profile measured t = {} but the run uses t = {}", profile.tp, shape.tp));
  }
  if (shape.cp != 1) {
    throw InputError(fmt::format("a profile measures the passes on whole sequences: use --cp 1 with --profile (not "
                                 "--cp {})",
                                 shape.cp));
  }
  if (shape.zero >= models::ZeroStage::kGradients && !shape.pipelined) {
    throw InputError(fmt::format("a profile measures the passes without ZeRO-{}'s per-micro-batch collectives: use "
                                 "--zero 1 or 0 with --profile",
                                 static_cast<int>(shape.zero)));
  }
  if (shape.sequence_parallel && shape.tp > 1) {
    throw InputError(
        "a profile measures one rank's shard without sequence parallelism (its norms on every token, its "
        "activations whole): drop --sequence-parallel with --profile");
  }
  if (shape.recompute != models::Recompute::kNone) {
    throw InputError("a profile measures the passes without recomputation: use --recompute none with --profile");
  }
  if (shape.mtp_layers > 0) {
    throw InputError("a profile measures the output layer without multi-token prediction: drop --mtp-layers with "
                     "--profile");
  }
  if (shape.runtime.fp8) {
    throw InputError(fmt::format("the profile measured {} passes, not FP8 ones: use --precision bf16 with --profile",
                                 profile.dtype.empty() ? "its own" : profile.dtype));
  }
  ProfiledCosts result;
  std::map<std::string, Estimate> by_kind;
  for (const std::string kind : {"embedding", "transformer", "output"}) {
    by_kind[kind] = estimate(profile, kind, shape.micro_batch_size, shape.seq_len, result.notes);
  }
  for (models::LayerCost& layer : layers.layers) {
    const Estimate& e = by_kind.at(kind_of(layer));
    result.times.push_back(e.times);
    if (shape.tp > 1) {
      result.times.back().forward_s += models::pass_terms(layer.forward, hardware, shape).tp_comm_s;
      result.times.back().backward_input_s += models::pass_terms(layer.backward_input, hardware, shape).tp_comm_s;
    }
    layer.activation_bytes = std::llround(e.activation_bytes);
    layer.weight_grad_bytes = std::min<std::int64_t>(layer.activation_bytes, std::llround(e.weight_grad_bytes));
    layer.working_bytes = std::llround(e.working_bytes);
    // Logits are part of what the output layer keeps; the profile measures the whole.
    layer.logits_bytes = std::min(layer.logits_bytes, layer.activation_bytes);
  }
  if (shape.tp > 1) {
    result.notes.push_back(fmt::format("t = {} collectives from {}'s time model", shape.tp, hardware.name));
  }
  return result;
}

std::string profile_source(const std::string& file, const models::Profile& profile,
                           const std::vector<std::string>& notes) {
  std::string source = fmt::format("profile {} ({} {} on {}, {})", file, profile.backend, profile.dtype, profile.device,
                                   profile.date);
  for (const std::string& note : notes) source += fmt::format("; {}", note);
  return source;
}

}  // namespace pipeplan::step
