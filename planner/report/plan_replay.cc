#include "planner/report/plan_replay.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/units.h"
#include "models/layers.h"
#include "sim/memory_fit.h"

namespace pipeplan::planner {
step::PipelineSetup plan_setup(const PlanCandidate& plan, int seq_len) {
  step::PipelineSetup setup;
  static_cast<models::PipelineLayout&>(setup) = plan;
  setup.shape = models::shape_of(plan, seq_len);
  setup.activation_limit = plan.activation_limit;
  setup.activation_limit_source = "the plan's activation_limit";
  return setup;
}

step::StageSplit plan_layout_split(const PlanFile& file, int transformer_layers, int stages) {
  try {
    return step::split_from_layout(file.layout, transformer_layers, stages, file.plan.mtp_layers);
  } catch (const InputError& error) {
    if (file.path.empty()) throw;
    std::string message = error.what();
    if (message.starts_with("--layout")) message = "'layout'" + message.substr(8);
    throw ParseError(file.path, file.layout_line, file.layout_column, message);
  }
}

step::ModelSimulation replay_plan(const PlanFile& file, const models::ModelConfig& model,
                                  const models::HardwareConfig& hardware, const sim::SimulationOptions& options,
                                  const models::Profile* profile, std::int64_t memory_cap_bytes) {
  step::PipelineSetup setup = plan_setup(file.plan, file.seq_len);
  setup.memory_cap_bytes = memory_cap_bytes;
  std::optional<models::Profile> loaded;
  if (profile == nullptr && !file.profile.empty()) loaded = models::read_profile_yaml(file.profile);
  setup.profile = profile != nullptr ? profile : (loaded ? &*loaded : nullptr);
  setup.profile_file = file.profile;
  setup.model_name = model.name;
  setup.split = file.layout.empty()
                    ? file.plan.split
                    : plan_layout_split(file, model.layers, file.plan.pp * file.plan.virtual_stages);
  return step::simulate_model(model, hardware, setup, options);
}

void fill_even_split(PlanReport& report, const PlanRequest& request) {
  PlanCandidate even = report.best_plan;
  const models::ModelLayers layers =
      models::expand_layers(request.model, models::shape_of(even, request.seq_len));
  try {
    even.split = step::even_split(layers.transformer_layers(), even.pp * even.virtual_stages);
  } catch (const InputError& error) {
    report.even_reason = error.what();
    return;
  }
  PlanFile file{"", "", request.global_batch, request.seq_len, even, "", request.profile_file};
  report.even = replay_plan(file, request.model, request.hardware, {}, request.profile ? &*request.profile : nullptr,
                            static_cast<std::int64_t>(request.memory_cap_bytes));
  const std::string overflow = sim::memory_overflow_text(report.even->report);
  if (!overflow.empty()) report.even_reason = "DOES NOT FIT in " + overflow;
}

}  // namespace pipeplan::planner
