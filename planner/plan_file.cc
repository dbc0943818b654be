#include "planner/plan_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/yaml_fields.h"
#include "models/job_layout.h"
#include "models/layout_fields.h"
#include "sim/generators/registry.h"
#include "sim/search/activation_limit.h"
#include "step/stage_split.h"

namespace pipeplan::planner {
namespace {

// `owner`: what misses a key (the plan, or one of its segments).
int read_int(const YAML::Node& root, const char* key, const std::string& path, const char* owner = "the plan") {
  const YAML::Node node = root[key];
  if (!node) throw_at(path, root, fmt::format("{} has no '{}'", owner, key));
  try {
    return node.as<int>();
  } catch (const YAML::Exception&) {
    throw_at(path, node, fmt::format("'{}' must be a whole number", key));
  }
}

// A size or count: a whole number >= 1.
int read_count(const YAML::Node& root, const char* key, const std::string& path, const char* owner = "the plan") {
  const int value = read_int(root, key, path, owner);
  if (value < 1) throw_at(path, root[key], fmt::format("'{}' must be >= 1 (got {})", key, value));
  return value;
}

std::string read_text(const YAML::Node& root, const char* key, const std::string& path,
                      const char* owner = "the plan") {
  const YAML::Node node = root[key];
  if (!node) throw_at(path, root, fmt::format("{} has no '{}'", owner, key));
  return scalar_text(node, path, key);
}

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', start)) {
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  items.push_back(text.substr(start));
  return items;
}

// A pipeline over several kinds: each segment's kind, stages and t; the
// stages add up to pp and the first t is the plan's tp.
std::vector<PlanSegment> read_segments(const YAML::Node& root, const PlanCandidate& plan, const std::string& path) {
  const YAML::Node list = root["segments"];
  if (!list.IsSequence() || list.size() == 0) {
    throw_at(path, list, "'segments' lists the pipeline's kinds in order: {kind: h100-sxm, stages: 4, tp: 2}, ...");
  }
  std::vector<PlanSegment> segments;
  long long stages = 0;
  for (const YAML::Node& entry : list) {
    if (!entry.IsMap()) throw_at(path, entry, "each of 'segments' is a map: {kind: KIND, stages: N, tp: T}");
    check_keys(entry, path, "a segment", {"kind", "stages", "tp"});
    constexpr const char* kSegment = "a segment";
    segments.push_back({read_text(entry, "kind", path, kSegment), read_count(entry, "stages", path, kSegment),
                        read_count(entry, "tp", path, kSegment)});
    stages += segments.back().stages;
  }
  if (stages != plan.pp) {
    throw_at(path, list, fmt::format("the segments' stages add up to {} and 'pp' is {}", stages, plan.pp));
  }
  if (segments.front().tp != plan.tp) {
    throw_at(path, list, fmt::format("the first segment's tp is {} and 'tp' is {}: they are one", segments.front().tp,
                                     plan.tp));
  }
  return segments;
}

}  // namespace

long long PlanFile::gpus() const {
  const long long replicas = static_cast<long long>(plan.cp) * plan.dp;
  if (segments.empty()) return static_cast<long long>(plan.tp) * plan.pp * replicas;
  long long gpus = 0;
  for (const PlanSegment& segment : segments) gpus += static_cast<long long>(segment.stages) * segment.tp * replicas;
  return gpus;
}

std::string write_plan_yaml(const PlanFile& file) {
  const PlanCandidate& p = file.plan;
  YAML::Emitter out;
  out << YAML::Comment("pipeplan plan; replay with: pipeplan simulate --plan FILE") << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << file.model;
  out << YAML::Key << "hardware" << YAML::Value << file.hardware;
  if (!file.segments.empty()) {
    out << YAML::Key << "segments" << YAML::Value << YAML::BeginSeq;
    for (const PlanSegment& segment : file.segments) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << segment.kind << YAML::Key
          << "stages" << YAML::Value << segment.stages << YAML::Key << "tp" << YAML::Value << segment.tp
          << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "gpus" << YAML::Value << file.gpus();
  out << YAML::Key << "global_batch" << YAML::Value << file.global_batch;
  out << YAML::Key << "seq" << YAML::Value << file.seq_len;
  for (const models::LayoutField& field : models::layout_fields()) {
    const std::string text = field.write(p);
    if (text.empty()) continue;
    out << YAML::Key << std::string(field.key) << YAML::Value;
    if (field.kind == models::FieldKind::kList && text.find(',') != std::string::npos) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const std::string& item : split_list(text)) out << item;
      out << YAML::EndSeq;
    } else {
      out << text;
    }
    // A searched order's limit beside its schedule (sim/, not the layout's).
    if (field.key == "schedule" && p.activation_limit) {
      out << YAML::Key << "activation_limit" << YAML::Value << p.activation_limit->spelled();
    }
  }
  out << YAML::Key << "layout" << YAML::Value << YAML::DoubleQuoted
      << (file.layout.empty() ? step::format_layout(p.split, p.mtp_layers) : file.layout);
  if (!file.profile.empty()) out << YAML::Key << "profile" << YAML::Value << file.profile;
  if (file.memory_cap_bytes > 0) out << YAML::Key << "memory_cap_bytes" << YAML::Value << file.memory_cap_bytes;
  out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "iteration_time_s" << YAML::Value << p.iteration_time_s;
  out << YAML::Key << "tokens_per_s" << YAML::Value << p.tokens_per_s;
  out << YAML::Key << "mfu" << YAML::Value << p.mfu;
  out << YAML::Key << "peak_memory_bytes" << YAML::Value << YAML::Flow << p.peak_memory_bytes;
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

// The plan's own keys besides its layout's (models/layout_fields.h).
constexpr std::array<std::string_view, 11> kPlanKeys{"model",  "hardware",         "segments", "gpus",
                                                      "global_batch", "seq",       "activation_limit", "layout",
                                                      "profile", "memory_cap_bytes", "predicted"};

void check_plan_keys(const YAML::Node& root, const std::string& path) {
  std::vector<std::string_view> known(kPlanKeys.begin(), kPlanKeys.end());
  for (const models::LayoutField& field : models::layout_fields()) known.push_back(field.key);
  check_keys(root, path, "the plan", known);
}

// Each layout field the file has, read through the table; a field the
// writer always writes (a default layout's is not empty) must be there.
void read_layout(const YAML::Node& root, const std::string& path, models::JobLayout& layout) {
  const models::JobLayout defaults;
  for (const models::LayoutField& field : models::layout_fields()) {
    const std::string key(field.key);
    const YAML::Node node = root[key];
    if (!node) {
      if (!field.write(defaults).empty()) throw_at(path, root, fmt::format("the plan has no '{}'", key));
      continue;
    }
    const std::string name = fmt::format("'{}'", key);
    if (field.kind == models::FieldKind::kList && node.IsSequence()) {
      // One setting per stage, in stage order.
      const std::vector<std::string> items = scalar_or_list(node, path, key);
      try {
        field.read(fmt::format("{}", fmt::join(items, ",")), name, layout);
      } catch (const InputError& error) {
        throw_at(path, node, error.what());
      }
      if (items.size() == 1) {
        layout.stage_recompute = {layout.recompute};
        layout.recompute = models::Recompute::kNone;
      }
      continue;
    }
    parse_at(node, path, key, [&](std::string_view text, std::string_view) { field.read(text, name, layout); });
  }
}

PlanFile read_plan_root(const YAML::Node& root, const std::string& path) {
  if (!root.IsMap()) throw_at(path, root, "a plan file is a map (write one with pipeplan plan --out)");
  check_plan_keys(root, path);
  PlanFile file;
  file.model = read_text(root, "model", path);
  file.hardware = read_text(root, "hardware", path);
  file.global_batch = read_count(root, "global_batch", path);
  file.seq_len = read_count(root, "seq", path);
  PlanCandidate& p = file.plan;
  read_layout(root, path, p);
  p.schedule = std::string(parse_at(root["schedule"], path, "schedule", [](std::string_view text, std::string_view) {
    return sim::find_schedule_family(text).name;
  }));
  if (root["activation_limit"]) {
    if (!sim::is_searched(sim::find_schedule_family(p.schedule))) {
      throw_at(path, root["activation_limit"],
               fmt::format("'activation_limit' bounds a searched schedule's activations (ZBAuto), and the plan runs {}: "
                           "drop it",
                           p.schedule));
    }
    p.activation_limit = parse_at(root["activation_limit"], path, "activation_limit",
                                  [](std::string_view text, std::string_view) {
                                    return sim::parse_activation_limit(text, "'activation_limit'");
                                  });
  }
  const std::size_t chunks = static_cast<std::size_t>(p.pp) * static_cast<std::size_t>(p.virtual_stages);
  if (!p.stage_recompute.empty() && p.stage_recompute.size() != chunks) {
    throw_at(path, root["recompute"],
             fmt::format("'recompute' lists {} stages' settings and the plan has {} stages (pp x virtual)",
                         p.stage_recompute.size(), chunks));
  }
  if (root["recompute_modules"] && !p.recomputes_selective()) {
    throw_at(path, root["recompute_modules"], "'recompute_modules' needs 'recompute: selective' (on some stage)");
  }
  if (p.pipeline_first && (p.cp > 1 || p.etp > 0)) {
    throw_at(path, root["rank_order"], "'rank_order: tp-pp-dp' takes cp 1 and no experts, as Megatron asserts");
  }
  if (p.recompute_in_bubbles && !p.recomputes()) {
    throw_at(path, root["recompute_in_bubbles"], "'recompute_in_bubbles' needs a recomputation ('recompute')");
  }
  try {
    models::check_layout_counts(p);
  } catch (const InputError& error) {
    throw_at(path, root["dp"], error.what());
  }
  if (root["segments"]) file.segments = read_segments(root, p, path);
  if (file.gpus() != read_int(root, "gpus", path)) {
    throw_at(path, root["gpus"],
             file.segments.empty() ? "'gpus' must equal tp x cp x pp x dp"
                                   : "'gpus' must equal the segments' stages x tp, times cp x dp");
  }
  if (static_cast<long long>(p.micro_batch_size) * p.microbatches * p.dp != file.global_batch) {
    throw_at(path, root["global_batch"], "'global_batch' must equal micro_batch_size x microbatches x dp");
  }
  file.layout = read_text(root, "layout", path);
  file.path = path;
  file.layout_line = root["layout"].Mark().line + 1;
  file.layout_column = root["layout"].Mark().column + 1;
  const int stages = parse_at(root["layout"], path, "layout",
                              [](std::string_view text, std::string_view) { return step::layout_stage_count(text); });
  if (stages != p.pp * p.virtual_stages) {
    throw_at(path, root["layout"],
             fmt::format("'layout' has {} stages but pp x virtual is {} x {} = {}", stages, p.pp, p.virtual_stages,
                         p.pp * p.virtual_stages));
  }
  if (root["profile"]) file.profile = read_text(root, "profile", path);
  if (const YAML::Node cap = root["memory_cap_bytes"]) {
    try {
      file.memory_cap_bytes = cap.as<std::int64_t>();
    } catch (const YAML::Exception&) {
      throw_at(path, cap, "'memory_cap_bytes' must be a whole number of bytes");
    }
    if (file.memory_cap_bytes <= 0) throw_at(path, cap, "'memory_cap_bytes' must be > 0 (or left out: the GPU's usable memory)");
  }
  // The figures `plan` printed, to set beside a replay or a real run.
  if (const YAML::Node predicted = root["predicted"]) {
    check_keys(predicted, path, "predicted", {"iteration_time_s", "tokens_per_s", "mfu", "peak_memory_bytes"});
  }
  if (const YAML::Node predicted = root["predicted"]; predicted && predicted["iteration_time_s"]) {
    try {
      p.iteration_time_s = predicted["iteration_time_s"].as<double>();
    } catch (const YAML::Exception&) {
      throw_at(path, predicted["iteration_time_s"], "'predicted.iteration_time_s' must be a number of seconds");
    }
  }
  return file;
}

}  // namespace

PlanFile read_plan_yaml(const std::string& path) {
  const YAML::Node root = load_yaml_file(path, "the plan file");
  PlanFile file = read_yaml(path, [&] { return read_plan_root(root, path); });
  // A model, hardware or profile file named by a relative path is the one
  // beside the plan when there is one there, wherever the plan is read from.
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  for (std::string* name : {&file.model, &file.hardware, &file.profile}) {
    const std::filesystem::path beside = directory / *name;
    std::error_code error;
    if (!name->empty() && std::filesystem::path(*name).is_relative() && !directory.empty() &&
        std::filesystem::is_regular_file(beside, error)) {
      *name = beside.string();
    }
  }
  return file;
}

}  // namespace pipeplan::planner
