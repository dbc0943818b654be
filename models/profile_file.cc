#include "models/profile_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/yaml_fields.h"

namespace pipeplan::models {
namespace {

void emit_timing(YAML::Emitter& out, const char* key, const Timing& timing) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "median_s" << YAML::Value << timing.median_s << YAML::Key << "min_s" << YAML::Value << timing.min_s;
  out << YAML::Key << "max_s" << YAML::Value << timing.max_s << YAML::Key << "runs" << YAML::Value << timing.runs;
  out << YAML::EndMap;
}

void emit_layer(YAML::Emitter& out, const LayerMeasurement& m) {
  out << YAML::BeginMap;
  out << YAML::Key << "layer" << YAML::Value << m.layer;
  out << YAML::Key << "micro_batch_size" << YAML::Value << m.micro_batch_size;
  out << YAML::Key << "seq" << YAML::Value << m.seq_len;
  emit_timing(out, "forward", m.forward);
  emit_timing(out, "backward_input", m.backward_input);
  emit_timing(out, "backward_weight", m.backward_weight);
  out << YAML::Key << "activation_bytes" << YAML::Value << m.activation_bytes;
  out << YAML::Key << "weight_grad_bytes" << YAML::Value << m.weight_grad_bytes;
  out << YAML::Key << "peak_working_bytes" << YAML::Value << m.peak_working_bytes;
  out << YAML::Key << "flops" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "forward" << YAML::Value << m.forward_flops;
  out << YAML::Key << "backward_input" << YAML::Value << m.backward_input_flops;
  out << YAML::Key << "backward_weight" << YAML::Value << m.backward_weight_flops << YAML::EndMap;
  const double total_s = m.forward.median_s + m.backward_input.median_s + m.backward_weight.median_s;
  const double total_flops = m.forward_flops + m.backward_input_flops + m.backward_weight_flops;
  out << YAML::Key << "achieved_flops_per_s" << YAML::Value << (total_s > 0 ? total_flops / total_s : 0.0);
  out << YAML::EndMap;
}

void emit_links(YAML::Emitter& out, const LinkProfile& links) {
  out << YAML::Key << "links" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "backend" << YAML::Value << links.backend;
  out << YAML::Key << "latency_s" << YAML::Value << links.latency_s;
  out << YAML::Key << "bandwidth_bytes_per_s" << YAML::Value << links.bandwidth_bytes_per_s;
  out << YAML::Key << "sizes" << YAML::Value << YAML::BeginSeq;
  for (const LinkMeasurement& m : links.sizes) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "bytes" << YAML::Value << m.bytes;
    out << YAML::Key << "time_us" << YAML::Value << m.time.median_s * 1e6;
    out << YAML::Key << "min_us" << YAML::Value << m.time.min_s * 1e6;
    out << YAML::Key << "max_us" << YAML::Value << m.time.max_s * 1e6;
    out << YAML::Key << "runs" << YAML::Value << m.time.runs;
    out << YAML::Key << "algbw_GBps" << YAML::Value << m.algbw / 1e9;
    out << YAML::Key << "busbw_GBps" << YAML::Value << m.busbw / 1e9 << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

class ProfileReader {
 public:
  explicit ProfileReader(std::string path) : path_(std::move(path)), root_(load_yaml_file(path_, "the profile")) {}

  Profile read() {
    if (!root_.IsMap()) throw_at(path_, root_, "a profile is a map; write one with pipeplan profile");
    const int schema = integer(root_, "schema");
    if (schema != kProfileSchemaVersion) {
      throw_at(path_, root_["schema"], fmt::format("profile schema version {} is not supported; this pipeplan reads "
                                                   "version {}: profile again with this version",
                                                   schema, kProfileSchemaVersion));
    }
    Profile profile;
    profile.device = text(root_, "device");
    profile.backend = text(root_, "backend");
    profile.dtype = text(root_, "dtype");
    profile.date = text(root_, "date");
    if (root_["software"]) profile.software = text(root_, "software");
    profile.model = text(root_, "model");
    profile.tp = integer(root_, "tp", 1);
    if (root_["warmup"]) profile.warmup = integer(root_, "warmup");
    const YAML::Node layers = field(root_, "layers");
    for (const YAML::Node& node : layers) profile.layers.push_back(layer(node));
    if (root_["links"]) profile.links = links(root_["links"]);
    return profile;
  }

 private:
  YAML::Node field(const YAML::Node& node, const char* key) const {
    const YAML::Node value = node[key];
    if (!value) throw_at(path_, node, fmt::format("the profile has no '{}'", key));
    return value;
  }
  std::string text(const YAML::Node& node, const char* key) const { return scalar_text(field(node, key), path_, key); }
  // Every number in a profile is a time, a size, a count or a rate: finite
  // and >= 0 (`minimum` 1 for the shape's counts).
  template <typename T>
  T number(const YAML::Node& node, const char* key, T minimum = 0) const {
    const YAML::Node value = field(node, key);
    T number{};
    try {
      number = value.as<T>();
    } catch (const YAML::Exception&) {
      throw_at(path_, value, fmt::format("'{}' must be a number", key));
    }
    if (!std::isfinite(static_cast<double>(number)) || number < minimum) {
      throw_at(path_, value, fmt::format("'{}' must be a finite number >= {}, got {}", key, minimum, value.Scalar()));
    }
    return number;
  }
  int integer(const YAML::Node& node, const char* key, int minimum = 0) const { return number<int>(node, key, minimum); }

  Timing timing(const YAML::Node& node, const char* key) const {
    const YAML::Node value = field(node, key);
    return {number<double>(value, "median_s"), number<double>(value, "min_s"), number<double>(value, "max_s"),
            integer(value, "runs")};
  }

  LayerMeasurement layer(const YAML::Node& node) const {
    LayerMeasurement m;
    m.layer = text(node, "layer");
    if (m.layer != "embedding" && m.layer != "transformer" && m.layer != "output") {
      throw_at(path_, node["layer"], fmt::format("unknown layer kind '{}': embedding, transformer or output", m.layer));
    }
    m.micro_batch_size = integer(node, "micro_batch_size", 1);
    m.seq_len = integer(node, "seq", 1);
    m.forward = timing(node, "forward");
    m.backward_input = timing(node, "backward_input");
    m.backward_weight = timing(node, "backward_weight");
    m.activation_bytes = number<std::int64_t>(node, "activation_bytes");
    m.weight_grad_bytes = number<std::int64_t>(node, "weight_grad_bytes");
    m.peak_working_bytes = number<std::int64_t>(node, "peak_working_bytes");
    const YAML::Node flops = field(node, "flops");
    m.forward_flops = number<double>(flops, "forward");
    m.backward_input_flops = number<double>(flops, "backward_input");
    m.backward_weight_flops = number<double>(flops, "backward_weight");
    return m;
  }

  LinkProfile links(const YAML::Node& node) const {
    LinkProfile links;
    links.backend = text(node, "backend");
    links.latency_s = number<double>(node, "latency_s");
    links.bandwidth_bytes_per_s = number<double>(node, "bandwidth_bytes_per_s", 1.0);
    for (const YAML::Node& size : field(node, "sizes")) {
      LinkMeasurement m;
      m.bytes = number<std::int64_t>(size, "bytes");
      m.time = {number<double>(size, "time_us") * 1e-6, number<double>(size, "min_us") * 1e-6,
                number<double>(size, "max_us") * 1e-6, integer(size, "runs")};
      m.algbw = number<double>(size, "algbw_GBps") * 1e9;
      m.busbw = number<double>(size, "busbw_GBps") * 1e9;
      links.sizes.push_back(m);
    }
    return links;
  }

  std::string path_;
  YAML::Node root_;
};

}  // namespace

std::string write_profile_yaml(const Profile& profile) {
  YAML::Emitter out;
  out << YAML::Comment("pipeplan profile: measured per-layer costs (times per micro-batch, bytes per micro-batch)");
  out << YAML::BeginMap;
  out << YAML::Key << "schema" << YAML::Value << profile.schema;
  out << YAML::Key << "device" << YAML::Value << profile.device;
  out << YAML::Key << "backend" << YAML::Value << profile.backend;
  out << YAML::Key << "dtype" << YAML::Value << profile.dtype;
  out << YAML::Key << "date" << YAML::Value << profile.date;
  if (!profile.software.empty()) out << YAML::Key << "software" << YAML::Value << profile.software;
  out << YAML::Key << "model" << YAML::Value << profile.model;
  out << YAML::Key << "tp" << YAML::Value << profile.tp;
  out << YAML::Key << "warmup" << YAML::Value << profile.warmup;
  out << YAML::Key << "layers" << YAML::Value << YAML::BeginSeq;
  for (const LayerMeasurement& layer : profile.layers) emit_layer(out, layer);
  out << YAML::EndSeq;
  if (profile.links) emit_links(out, *profile.links);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Profile read_profile_yaml(const std::string& path) {
  return read_yaml(path, [&] { return ProfileReader(path).read(); });
}

void fit_link(LinkProfile& links) {
  // Least squares of time on bytes weighted by 1 / time^2: relative errors
  // count alike, so the latency (small messages) and the bandwidth (large
  // ones) are both fitted, not just the largest sizes.
  double w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  int samples = 0;
  for (const LinkMeasurement& m : links.sizes) {
    const double x = static_cast<double>(m.bytes), y = m.time.median_s;
    if (y <= 0) continue;
    const double weight = 1 / (y * y);
    w += weight;
    sx += weight * x;
    sy += weight * y;
    sxx += weight * x * x;
    sxy += weight * x * y;
    ++samples;
  }
  if (samples < 2) return;
  const double slope = (w * sxy - sx * sy) / (w * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / w;
  links.latency_s = std::max(0.0, intercept);
  links.bandwidth_bytes_per_s = slope > 0 ? 1.0 / slope : 0.0;
}

}  // namespace pipeplan::models
