#include "planner/plan_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/yaml_fields.h"
#include "models/placement.h"
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

double read_number(const YAML::Node& root, const char* key, const std::string& path) {
  const YAML::Node node = root[key];
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    throw_at(path, node, fmt::format("'{}' must be a number", key));
  }
}

std::string read_text(const YAML::Node& root, const char* key, const std::string& path,
                      const char* owner = "the plan") {
  const YAML::Node node = root[key];
  if (!node) throw_at(path, root, fmt::format("{} has no '{}'", owner, key));
  return scalar_text(node, path, key);
}

bool read_flag(const YAML::Node& root, const char* key, const std::string& path) {
  const std::string text = read_text(root, key, path);
  if (text != "true" && text != "false") throw_at(path, root[key], fmt::format("'{}' must be true or false", key));
  return text == "true";
}

// The runtime flags by their plan-file keys (written only when on; a file
// without one means off).
std::array<std::pair<const char*, bool*>, 6> runtime_fields(models::RuntimeFlags& runtime) {
  return {{{"overlap_grad_reduce", &runtime.overlap_grad_reduce},
           {"overlap_param_gather", &runtime.overlap_param_gather},
           {"grad_reduce_in_bf16", &runtime.grad_reduce_in_bf16},
           {"tp_comm_overlap", &runtime.tp_comm_overlap},
           {"fp8", &runtime.fp8},
           {"moe_a2a_overlap", &runtime.moe_a2a_overlap}}};
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
  out << YAML::Key << "tp" << YAML::Value << p.tp;
  if (p.cp > 1) out << YAML::Key << "cp" << YAML::Value << p.cp;
  out << YAML::Key << "pp" << YAML::Value << p.pp;
  out << YAML::Key << "dp" << YAML::Value << p.dp;
  // Expert parallelism, for models with experts (etp resolved: 0 is t).
  if (p.ep > 1 || p.etp > 0) {
    out << YAML::Key << "ep" << YAML::Value << p.ep;
    out << YAML::Key << "etp" << YAML::Value << (p.etp > 0 ? p.etp : p.tp);
  }
  if (p.moe_load_imbalance != 1.0) out << YAML::Key << "moe_load_imbalance" << YAML::Value << p.moe_load_imbalance;
  if (p.moe_capacity_factor > 0) out << YAML::Key << "moe_capacity_factor" << YAML::Value << p.moe_capacity_factor;
  if (p.moe_dispatcher != models::MoeDispatcher::kAllToAll) {
    out << YAML::Key << "moe_dispatcher" << YAML::Value << std::string(models::moe_dispatcher_name(p.moe_dispatcher));
  }
  out << YAML::Key << "micro_batch_size" << YAML::Value << p.micro_batch_size;
  out << YAML::Key << "microbatches" << YAML::Value << p.microbatches;
  if (p.pipeline_first)
    out << YAML::Key << "rank_order" << YAML::Value << std::string(models::megatron_order_name(true));
  out << YAML::Key << "schedule" << YAML::Value << p.schedule;
  if (p.activation_limit) out << YAML::Key << "activation_limit" << YAML::Value << p.activation_limit->spelled();
  out << YAML::Key << "virtual" << YAML::Value << p.virtual_stages;
  out << YAML::Key << "recompute" << YAML::Value;
  if (p.stage_recompute.empty()) {
    out << std::string(models::recompute_name(p.recompute));
  } else {
    out << YAML::Flow << YAML::BeginSeq;
    for (models::Recompute stage : p.stage_recompute) out << std::string(models::recompute_name(stage));
    out << YAML::EndSeq;
  }
  if (p.recompute_in_bubbles) out << YAML::Key << "recompute_in_bubbles" << YAML::Value << "true";
  if (recomputes_selective(p) && p.recompute_modules != models::kDefaultRecomputeModules) {
    out << YAML::Key << "recompute_modules" << YAML::Value << models::recompute_modules_name(p.recompute_modules);
  }
  out << YAML::Key << "sequence_parallel" << YAML::Value << (p.sequence_parallel ? "true" : "false");
  out << YAML::Key << "zero" << YAML::Value << static_cast<int>(p.zero);
  models::RuntimeFlags runtime = p.runtime;
  for (const auto& [key, on] : runtime_fields(runtime)) {
    if (*on) out << YAML::Key << key << YAML::Value << "true";
  }
  out << YAML::Key << "layout" << YAML::Value << YAML::DoubleQuoted
      << (file.layout.empty() ? step::format_layout(p.split) : file.layout);
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

PlanFile read_plan_root(const YAML::Node& root, const std::string& path) {
  if (!root.IsMap()) throw_at(path, root, "a plan file is a map (write one with pipeplan plan --out)");
  check_keys(root, path, "the plan",
             {"model",
              "hardware",
              "segments",
              "gpus",
              "global_batch",
              "seq",
              "tp",
              "cp",
              "pp",
              "dp",
              "ep",
              "etp",
              "moe_load_imbalance",
              "moe_capacity_factor",
              "moe_dispatcher",
              "micro_batch_size",
              "microbatches",
              "rank_order",
              "schedule",
              "activation_limit",
              "virtual",
              "recompute",
              "recompute_in_bubbles",
              "recompute_modules",
              "sequence_parallel",
              "zero",
              "overlap_grad_reduce",
              "overlap_param_gather",
              "grad_reduce_in_bf16",
              "tp_comm_overlap",
              "fp8",
              "moe_a2a_overlap",
              "layout",
              "profile",
              "memory_cap_bytes",
              "predicted"});
  PlanFile file;
  file.model = read_text(root, "model", path);
  file.hardware = read_text(root, "hardware", path);
  file.global_batch = read_count(root, "global_batch", path);
  file.seq_len = read_count(root, "seq", path);
  PlanCandidate& p = file.plan;
  p.tp = read_count(root, "tp", path);
  p.cp = root["cp"] ? read_count(root, "cp", path) : 1;
  p.pp = read_count(root, "pp", path);
  p.dp = read_count(root, "dp", path);
  p.ep = root["ep"] ? read_count(root, "ep", path) : 1;
  p.etp = root["etp"] ? read_count(root, "etp", path) : 0;
  if (root["moe_load_imbalance"]) p.moe_load_imbalance = read_number(root, "moe_load_imbalance", path);
  if (root["moe_capacity_factor"]) p.moe_capacity_factor = read_number(root, "moe_capacity_factor", path);
  if (root["moe_dispatcher"]) {
    p.moe_dispatcher = parse_at(
        root["moe_dispatcher"], path, "moe_dispatcher",
        [](std::string_view text, std::string_view) { return models::parse_moe_dispatcher(text, "'moe_dispatcher'"); });
  }
  p.micro_batch_size = read_count(root, "micro_batch_size", path);
  p.microbatches = read_count(root, "microbatches", path);
  p.schedule = std::string(
      parse_at(root["schedule"] ? root["schedule"] : root, path, "schedule",
               [](std::string_view text, std::string_view) { return sim::find_schedule_family(text).name; }));
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
  if (!root["recompute"]) throw_at(path, root, "the plan has no 'recompute'");
  p.virtual_stages = read_count(root, "virtual", path);
  const YAML::Node recompute = root["recompute"];
  if (recompute.IsSequence()) {
    // One setting per stage, in stage order.
    const std::size_t stages = static_cast<std::size_t>(p.pp) * static_cast<std::size_t>(p.virtual_stages);
    if (recompute.size() != stages) {
      throw_at(path, recompute,
               fmt::format("'recompute' lists {} stages' settings and the plan has {} stages (pp x virtual)",
                           recompute.size(), stages));
    }
    for (const YAML::Node& stage : recompute) {
      p.stage_recompute.push_back(parse_at(stage, path, "recompute", [](std::string_view text, std::string_view) {
        return models::parse_recompute(text, "each of 'recompute''s stages");
      }));
    }
  } else {
    p.recompute = parse_at(recompute, path, "recompute", [](std::string_view text, std::string_view) {
      return models::parse_recompute(text, "'recompute'");
    });
  }
  if (root["recompute_modules"]) {
    if (!recomputes_selective(p)) {
      throw_at(path, root["recompute_modules"], "'recompute_modules' needs 'recompute: selective' (on some stage)");
    }
    p.recompute_modules =
        parse_at(root["recompute_modules"], path, "recompute_modules", [](std::string_view text, std::string_view) {
          return models::parse_recompute_modules(text, "'recompute_modules'");
        });
  }
  if (root["rank_order"]) {
    p.pipeline_first = parse_at(root["rank_order"], path, "rank_order", [](std::string_view text, std::string_view) {
      return models::parse_megatron_order(text, "'rank_order'");
    });
    if (p.pipeline_first && (p.cp > 1 || p.etp > 0)) {
      throw_at(path, root["rank_order"], "'rank_order: tp-pp-dp' takes cp 1 and no experts, as Megatron asserts");
    }
  }
  if (root["recompute_in_bubbles"]) {
    p.recompute_in_bubbles = read_flag(root, "recompute_in_bubbles", path);
    if (p.recompute_in_bubbles && p.recompute == models::Recompute::kNone &&
        std::none_of(p.stage_recompute.begin(), p.stage_recompute.end(),
                     [](models::Recompute stage) { return stage != models::Recompute::kNone; })) {
      throw_at(path, root["recompute_in_bubbles"], "'recompute_in_bubbles' needs a recomputation ('recompute')");
    }
  }
  p.sequence_parallel = read_flag(root, "sequence_parallel", path);
  const int zero = read_int(root, "zero", path);
  if (zero < 0 || zero > 3) throw_at(path, root["zero"], "'zero' must be 0..3");
  p.zero = static_cast<models::ZeroStage>(zero);
  for (const auto& [key, flag] : runtime_fields(p.runtime)) {
    if (root[key]) *flag = read_flag(root, key, path);
  }
  if (root["segments"]) file.segments = read_segments(root, p, path);
  if (file.gpus() != read_int(root, "gpus", path)) {
    throw_at(path, root["gpus"],
             file.segments.empty() ? "'gpus' must equal tp x cp x pp x dp"
                                   : "'gpus' must equal the segments' stages x tp, times cp x dp");
  }
  if (p.micro_batch_size * p.microbatches * p.dp != file.global_batch) {
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
