#include "validate/validation_plan.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "common/error.h"
#include "common/units.h"
#include "models/cluster.h"
#include "models/layers.h"
#include "planner/report/plan_replay.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/search/searched_schedule.h"

namespace pipeplan::validate {

ValidationPlan prepare_validation(const std::string& plan_path, int launched_ranks, const std::string& backend) {
  if (backend != "cpu" && backend != "cuda") throw InputError(fmt::format("--backend '{}': use cpu or cuda", backend));
  ValidationPlan plan;
  plan.path = plan_path;
  plan.file = planner::read_plan_yaml(plan_path);
  const planner::PlanCandidate& candidate = plan.file.plan;
  if (!candidate.stage_recompute.empty()) {
    throw InputError(fmt::format("validate runs one recomputation on every stage, and the plan recomputes per stage "
                                 "({}): plan with --recompute none, selective or full",
                                 models::stage_recompute_name(candidate.stage_recompute)));
  }
  if (candidate.tp != 1 || candidate.cp != 1 || candidate.dp != 1) {
    throw InputError(
        fmt::format("validate runs pipeline parallelism only (t=1, c=1, d=1); the plan has t={} c={} d={}: plan "
                    "with --tp 1 --cp 1 --dp 1",
                    candidate.tp, candidate.cp, candidate.dp));
  }
  const int plan_ranks = candidate.tp * candidate.cp * candidate.pp * candidate.dp;
  if (plan_ranks != launched_ranks) {
    throw InputError(
        fmt::format("the plan needs {} ranks (t={} x c={} x p={} x d={}) but {} were launched: run mpirun -np {} "
                    "pipeplan validate ...",
                    plan_ranks, candidate.tp, candidate.cp, candidate.pp, candidate.dp, launched_ranks, plan_ranks));
  }
  plan.model = models::load_model(plan.file.model);
  plan.hardware = models::load_platform(plan.file.hardware);
  plan.shape = models::shape_of(candidate, plan.file.seq_len);
  // A searched order is known only with the costs it is searched for: its
  // shape now, the order once rank 0 has predicted (share_searched_order).
  plan.searched_order = sim::is_searched(sim::find_schedule_family(candidate.schedule));
  const sim::Schedule schedule =
      plan.searched_order
          ? sim::searched_schedule_shape(candidate.schedule, candidate.pp, candidate.microbatches)
          : sim::generate_schedule(candidate.schedule,
                                   {candidate.pp, candidate.microbatches, candidate.virtual_stages, 0});
  const double scale = schedule.microbatch_scale;
  if (scale != std::round(scale)) throw InputError("the schedule's micro-batch scale is not a whole number");
  plan.shape.micro_batch_size *= static_cast<int>(scale);
  plan.lowered = sim::lower_communication(schedule, sim::RecvPlacement::kBeforeUse);
  const models::ModelLayers layers =
      models::expand_layers(plan.model, models::shape_of(candidate, plan.file.seq_len));
  plan.split = plan.file.layout.empty()
                   ? candidate.split
                   : step::split_from_layout(plan.file.layout, layers.transformer_layers(), schedule.stages,
                                             candidate.mtp_layers);
  if (plan.split.stages() != schedule.stages) {
    throw InputError(fmt::format("the plan's split has {} stages but its schedule {} has {}", plan.split.stages(),
                                 schedule.name, schedule.stages));
  }
  return plan;
}

step::ModelSimulation predict(const ValidationPlan& plan, const models::Profile* profile,
                              const std::string& profile_file) {
  planner::PlanFile file = plan.file;
  file.profile = profile_file;
  sim::SimulationOptions options;
  options.record_timeline = true;
  // The plan's cap: a searched order is searched within it, as plan did.
  return planner::replay_plan(file, plan.model, plan.hardware, options, profile, plan.file.memory_cap_bytes);
}

void check_memory(const ValidationPlan& plan, const step::ModelSimulation& predicted, std::int64_t available_bytes) {
  const std::int64_t device = plan.hardware.gpu.usable_memory_bytes();
  for (std::size_t rank = 0; rank < predicted.memory.size(); ++rank) {
    const std::int64_t peak = predicted.memory[rank].total();
    if (peak > device) {
      throw InputError(
          fmt::format("rank {} needs {} but a {} rank has {}: make a plan that fits (pipeplan plan "
                      "--hardware {})",
                      rank, format_bytes(peak), plan.hardware.name, format_bytes(device), plan.file.hardware));
    }
    if (available_bytes > 0 && peak > available_bytes) {
      throw InputError(
          fmt::format("rank {} needs {} but this machine has {} free per rank: use a smaller model, "
                      "sequence or micro-batch",
                      rank, format_bytes(peak), format_bytes(available_bytes)));
    }
  }
}

std::int64_t available_bytes_per_rank(int ranks_on_host) {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    std::int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") return kib * 1024 / std::max(ranks_on_host, 1);
    meminfo.ignore(256, '\n');
  }
  return 0;
}

}  // namespace pipeplan::validate
