#include "fuzz/fuzz_targets.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/error.h"
#include "common/units.h"
#include "models/cluster.h"
#include "models/hardware.h"
#include "models/hf_config.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/profile_file.h"
#include "planner/plan_file.h"
#include "sim/schedule_csv.h"
#include "sim/serving.h"
#include "sim/serving_workload.h"
#include "sim/simulate.h"
#include "step/stage_split.h"
#include "study/expression.h"
#include "study/study_file.h"

namespace pipeplan::fuzz {
namespace {

// A finding that is not a crash: the harness turns it into one.
class Finding : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

template <class Work>
void refusals_allowed(Work&& work) {
  try {
    work();
  } catch (const InputError&) {
  }
}

// Parsers that read files get the input through one, named per process.
std::string as_file(std::string_view input, const char* suffix) {
  const std::string path = "/tmp/pipeplan-fuzz-" + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary).write(input.data(), static_cast<std::streamsize>(input.size()));
  return path;
}

void layout(std::string_view input) {
  refusals_allowed([&] {
    const int stages = step::layout_stage_count(input);
    step::split_from_layout(input, 80, stages);
  });
}

// Read, write back and read again: the same schedule. Small ones are also
// validated and simulated with unit costs.
void schedule_csv(std::string_view input) {
  sim::Schedule schedule;
  try {
    std::istringstream in{std::string(input)};
    schedule = sim::read_schedule_csv(in, "fuzz.csv");
  } catch (const InputError&) {
    return;
  }
  std::istringstream again_in(sim::write_schedule_csv(schedule));
  const sim::Schedule again = sim::read_schedule_csv(again_in, "fuzz.csv");
  if (again.actions != schedule.actions || again.stage_to_rank != schedule.stage_to_rank ||
      again.idle_slots != schedule.idle_slots) {
    throw Finding("a schedule read from CSV does not read back as written");
  }
  if (schedule.action_count() > 2000) return;
  refusals_allowed([&] {
    sim::RankCosts costs;
    costs.forward_s = {1.0};
    costs.backward_input_s = {1.0};
    costs.backward_weight_s = {0.5};
    costs.activation_bytes = {1 << 20};
    costs.send_bytes = {1 << 10};
    sim::Topology topology;
    topology.intra_node = {1e-3, 1e9};
    sim::simulate(schedule, sim::expand_rank_costs(costs, schedule), topology);
  });
}

void units(std::string_view input) {
  refusals_allowed([&] { parse_bytes(input, "--bytes"); });
  refusals_allowed([&] { parse_duration_s(input, "--time", 1e-3); });
  refusals_allowed([&] { parse_bandwidth(input, "--bandwidth"); });
  refusals_allowed([&] { parse_non_negative(input, "--number"); });
}

void expression(std::string_view input) {
  refusals_allowed([&] {
    const study::Expression parsed = study::parse_expression(input);
    parsed.evaluate([](const std::string& name) -> std::optional<double> {
      if (name == "stages") return 8.0;
      if (name == "microbatches") return 32.0;
      return std::nullopt;
    });
  });
}

// Parsed, then expanded into layers at a small shape, as `model show` does.
void model_yaml(std::string_view input) {
  refusals_allowed([&] {
    const models::ModelConfig model = models::parse_model_yaml(std::string(input), "fuzz.yaml");
    models::TrainingShape shape;
    shape.micro_batch_size = 1;
    shape.seq_len = std::min(model.context, 2048);
    const models::ModelLayers layers = models::expand_layers(model, shape);
    models::model_flops_per_microbatch(layers, shape);
  });
}

// A Hugging Face config.json, expanded as model_yaml's models are.
void hf_config(std::string_view input) {
  refusals_allowed([&] {
    const models::ModelConfig model = models::parse_hf_config(std::string(input), "fuzz/config.json");
    models::TrainingShape shape;
    shape.seq_len = std::min(model.context, 2048);
    models::expand_layer_kinds(model, shape);
  });
}

void hardware_yaml(std::string_view input) {
  refusals_allowed([&] { models::parse_hardware_yaml(std::string(input), "fuzz.yaml"); });
}

void cluster_yaml(std::string_view input) {
  refusals_allowed([&] { models::parse_cluster_yaml(std::string(input), "fuzz.yaml"); });
}

void study_file(std::string_view input) {
  const std::string path = as_file(input, "-study.yaml");
  refusals_allowed([&] { study::read_study(path); });
}

void plan_file(std::string_view input) {
  const std::string path = as_file(input, "-plan.yaml");
  refusals_allowed([&] { planner::read_plan_yaml(path); });
}

void profile_file(std::string_view input) {
  const std::string path = as_file(input, "-profile.yaml");
  refusals_allowed([&] { models::read_profile_yaml(path); });
}

// Stage time by the batch's tokens, links free: enough to run a trace.
class TokenCosts : public sim::ServingCosts {
 public:
  int stages() const override { return 2; }
  double stage_s(int, const StepLoad& load) const override { return 1e-4 * load.tokens + 1e-6 * load.context_tokens; }
  double hop_s(int, const StepLoad&) const override { return 1e-5; }
  double return_s(const StepLoad&) const override { return 1e-5; }
};

// A request trace, replayed through a small pipeline when it runs in a
// moment: every request completes, in order of time; the input is also
// read as a length range.
void request_trace(std::string_view input) {
  refusals_allowed([&] {
    const std::vector<sim::ServingRequest> requests = sim::parse_request_trace(std::string(input), "fuzz.csv");
    double tokens = 0;
    for (const sim::ServingRequest& request : requests) tokens += request.prompt_tokens + request.output_tokens;
    if (requests.size() > 64 || tokens > 1e5) return;
    sim::SchedulerLimits limits;
    limits.kv_blocks = 64;
    limits.max_batch_tokens = 256;
    const sim::ServingRun run = sim::simulate_serving({requests, 0}, TokenCosts{}, limits);
    for (const sim::RequestRecord& record : run.requests) {
      if (!(record.arrival_s <= record.first_token_s && record.first_token_s <= record.finish_s)) {
        throw Finding("a request finished before it arrived or before its first token");
      }
    }
  });
  refusals_allowed([&] { sim::parse_length_range(input, "--prompt-tokens"); });
}

}  // namespace

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets{
      {"layout", layout},         {"schedule_csv", schedule_csv},   {"units", units},
      {"expression", expression}, {"model_yaml", model_yaml},       {"hardware_yaml", hardware_yaml},
      {"cluster_yaml", cluster_yaml},
      {"study_file", study_file}, {"plan_file", plan_file},         {"profile_file", profile_file},
      {"request_trace", request_trace}, {"hf_config", hf_config},
  };
  return targets;
}

const FuzzTarget& find_fuzz_target(std::string_view name) {
  for (const FuzzTarget& target : fuzz_targets()) {
    if (target.name == name) return target;
  }
  throw InputError("unknown fuzz target '" + std::string(name) + "'");
}

}  // namespace pipeplan::fuzz
