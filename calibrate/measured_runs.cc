#include "calibrate/measured_runs.h"

#include <fmt/format.h>

#include <filesystem>

#include "calibrate/validation_runs.h"
#include "common/error.h"
#include "common/units.h"
#include "common/yaml_fields.h"
#include "sim/generators/registry.h"
#include "step/stage_split.h"

namespace pipeplan::calibrate {
namespace {

class RunReader {
 public:
  RunReader(const YAML::Node& node, std::string file) : node_(node), file_(std::move(file)) {}

  MeasuredRun read() const {
    check_keys(node_, file_, "a run",
               {"name",
                "source",
                "model",
                "hardware",
                "gpus",
                "tp",
                "cp",
                "pp",
                "vp",
                "micro_batch_size",
                "global_batch",
                "seq",
                "schedule",
                "recompute",
                "recompute_modules",
                "sequence_parallel",
                "distributed_optimizer",
                "overlap_grad_reduce",
                "overlap_param_gather",
                "grad_reduce_in_bf16",
                "tp_comm_overlap",
                "optimizer_states_in_bf16",
                "master_weights_in_bf16",
                "fp8_param_gather",
                "precision",
                "step_time",
                "mfu",
                "peak_memory",
                "ep",
                "etp",
                "mtp_layers",
                "moe_dispatcher",
                "moe_a2a_overlap",
                "layout"});
    MeasuredRun run;
    run.place = fmt::format("{}:{}", file_, node_.Mark().line + 1);
    run.name = text("name");
    run.source = node_["source"] ? text("source") : "";
    run.model = text("model");
    run.hardware = text("hardware");
    run.gpus = *count("gpus", true);
    run.job.tp = count("tp", false).value_or(1);
    run.job.cp = count("cp", false).value_or(1);
    run.job.pp = count("pp", false).value_or(1);
    run.job.virtual_stages = count("vp", false).value_or(1);
    run.job.micro_batch_size = count("micro_batch_size", false).value_or(1);
    run.global_batch = *count("global_batch", true);
    run.seq = *count("seq", true);
    run.job.schedule = node_["schedule"] ? std::string(sim::find_schedule_family(text("schedule")).name)
                                     : (run.job.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B");
    if (node_["recompute"]) {
      run.job.recompute = parse_at(
          node_["recompute"], file_, "recompute",
          [](const std::string& value, const std::string&) { return models::parse_recompute(value, "'recompute'"); });
    }
    if (node_["recompute_modules"]) {
      if (run.job.recompute != models::Recompute::kSelective) fail("recompute_modules", "needs 'recompute: selective'");
      run.job.recompute_modules = parse_at(node_["recompute_modules"], file_, "recompute_modules",
                                       [](const std::string& value, const std::string&) {
                                         return models::parse_recompute_modules(value, "'recompute_modules'");
                                       });
    }
    run.job.sequence_parallel = flag("sequence_parallel");
    run.job.zero = flag("distributed_optimizer") ? models::ZeroStage::kOptimizer : models::ZeroStage::kNone;
    run.job.runtime.overlap_grad_reduce = flag("overlap_grad_reduce");
    run.job.runtime.overlap_param_gather = flag("overlap_param_gather");
    run.job.runtime.grad_reduce_in_bf16 = flag("grad_reduce_in_bf16");
    run.job.runtime.tp_comm_overlap = flag("tp_comm_overlap");
    run.job.runtime.optimizer_states_in_bf16 = flag("optimizer_states_in_bf16");
    run.job.runtime.master_weights_in_bf16 = flag("master_weights_in_bf16");
    run.job.runtime.fp8_param_gather = flag("fp8_param_gather");
    if (node_["precision"]) {
      const std::string precision = text("precision");
      if (precision != "bf16" && precision != "fp8") fail("precision", "must be bf16 or fp8");
      run.job.runtime.fp8 = precision == "fp8";
    }
    run.job.ep = count("ep", false).value_or(1);
    run.job.etp = count("etp", false).value_or(0);
    run.job.mtp_layers = count("mtp_layers", false).value_or(0);
    if (node_["moe_dispatcher"]) {
      run.job.routing.dispatcher =
          parse_at(node_["moe_dispatcher"], file_, "moe_dispatcher", [](const std::string& value, const std::string&) {
            return models::parse_moe_dispatcher(value, "'moe_dispatcher'");
          });
    }
    run.job.runtime.moe_a2a_overlap = flag("moe_a2a_overlap");
    if (node_["layout"]) run.layout = text("layout");
    if (!node_["step_time"]) fail("step_time", "is missing; every run gives its measured step time, e.g. '8.309s'");
    run.step_time_s = parse_at(node_["step_time"], file_, "step_time", [](const std::string& value, const std::string& field) {
      return parse_duration_s(value, field, 1.0);
    });
    if (!(run.step_time_s > 0 && run.step_time_s <= kMostMeasuredStepS)) {
      fail("step_time", "must be a measured time above 0 and at most a day, e.g. '8.309s'");
    }
    if (node_["mfu"]) {
      const double mfu = parse_at(node_["mfu"], file_, "mfu", parse_fraction);
      if (!(mfu > 0 && mfu <= 1)) fail("mfu", "must be a share in (0, 100 %], e.g. '53.5%'");
      run.mfu = mfu;
    }
    if (node_["peak_memory"]) {
      run.peak_memory_bytes = static_cast<double>(parse_at(node_["peak_memory"], file_, "peak_memory", parse_bytes));
    }
    check_layout(run);
    return run;
  }

 private:
  [[noreturn]] void fail(const char* field, const std::string& message) const {
    const YAML::Node node = node_[field];
    throw_at(file_, node ? node : node_, fmt::format("{}: {}", field, message));
  }

  std::string text(const char* field) const {
    if (!node_[field]) fail(field, "is missing; every run names it");
    return scalar_text(node_[field], file_, field);
  }

  std::optional<int> count(const char* field, bool required) const {
    if (!node_[field]) {
      if (required) fail(field, "is missing; every run gives it");
      return std::nullopt;
    }
    return parse_at(node_[field], file_, field,
                    [](std::string_view text, std::string_view name) { return parse_count(text, name, 1); });
  }

  bool flag(const char* field) const {
    if (!node_[field]) return false;
    const std::string value = scalar_text(node_[field], file_, field);
    if (value == "true") return true;
    if (value == "false") return false;
    fail(field, "must be true or false");
  }

  // Checks the layout against the GPUs and the batch, and completes it
  // with d and the micro-batches per replica.
  void check_layout(MeasuredRun& run) const {
    const long long model_parallel = static_cast<long long>(run.job.tp) * run.job.cp * run.job.pp;
    if (run.gpus % model_parallel != 0) {
      fail("gpus", fmt::format("{} GPUs do not divide into tp x cp x pp = {} groups", run.gpus, model_parallel));
    }
    const long long dp = run.gpus / model_parallel;
    if (run.job.cp > 1 && run.seq % (2 * run.job.cp) != 0) {
      fail("cp", fmt::format("the sequence ({}) must divide into 2 x cp = {} chunks", run.seq, 2 * run.job.cp));
    }
    if (run.global_batch % (dp * run.job.micro_batch_size) != 0) {
      fail("global_batch", fmt::format("{} sequences do not divide into {} data-parallel replicas of micro-batches of {}",
                                       run.global_batch, dp, run.job.micro_batch_size));
    }
    const long long replicas = dp * run.job.cp;  // ranks holding the same weights
    // Megatron accepts the distributed optimizer on one replica, where it
    // shards nothing: the run is costed without sharding.
    if (run.job.zero == models::ZeroStage::kOptimizer && replicas == 1) run.job.zero = models::ZeroStage::kNone;
    if (run.job.sequence_parallel && run.job.tp == 1) fail("sequence_parallel", "needs tp > 1; drop it");
    if (run.job.runtime.overlap_grad_reduce && replicas == 1) {
      fail("overlap_grad_reduce", "needs more than one data- or context-parallel rank; drop it");
    }
    if (run.job.runtime.tp_comm_overlap && !run.job.sequence_parallel) {
      fail("tp_comm_overlap", "overlaps sequence parallelism's collectives; set sequence_parallel too");
    }
    if (run.job.runtime.overlap_param_gather && !run.job.runtime.overlap_grad_reduce) {
      fail("overlap_param_gather", "needs overlap_grad_reduce too (as Megatron-LM asserts)");
    }
    if (run.job.runtime.overlap_param_gather && run.job.zero != models::ZeroStage::kOptimizer) {
      fail("overlap_param_gather", "overlaps the distributed optimizer's gather; set distributed_optimizer too");
    }
    run.job.dp = static_cast<int>(dp);
    run.job.microbatches = static_cast<int>(run.global_batch / (dp * run.job.micro_batch_size));
  }

  const YAML::Node& node_;
  std::string file_;
};

}  // namespace

std::vector<MeasuredRun> read_runs_yaml(const std::string& path) {
  const YAML::Node root = load_yaml_file(path, "the runs file");
  return read_yaml(path, [&] {
    check_keys(root, path, "the runs file", {"runs"});
    const YAML::Node list = root["runs"];
    if (!list || !list.IsSequence() || list.size() == 0) {
      throw_at(path, list ? list : root, "runs: give a list of measured runs (name, model, hardware, gpus, ...)");
    }
    std::vector<MeasuredRun> runs;
    for (const YAML::Node& node : list) runs.push_back(RunReader(node, path).read());
    return runs;
  });
}

std::vector<MeasuredRun> read_runs_file(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".json") return {read_validation_run(path)};
  return read_runs_yaml(path);
}

step::PipelineSetup run_setup(const MeasuredRun& run, const models::ModelConfig& model) {
  // A measured run ran at its length: beyond a RoPE model's context it was
  // scaled; beyond learned positions it cannot have run.
  if (run.seq > model.context && model.position == models::PositionEmbedding::kLearned) {
    throw InputError(fmt::format("'seq' {} exceeds {}'s {} learned positions: no longer sequence can run", run.seq,
                                 model.name, model.context));
  }
  step::PipelineSetup setup;
  static_cast<models::PipelineLayout&>(setup) = run.job;
  setup.shape = models::shape_of(run.job, run.seq);
  setup.split = run.split;
  if (!run.layout.empty()) {
    setup.split =
        step::split_from_layout(run.layout, model.layers, run.job.pp * run.job.virtual_stages, run.job.mtp_layers);
  }
  return setup;
}

}  // namespace pipeplan::calibrate
