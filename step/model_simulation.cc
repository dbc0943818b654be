#include "step/model_simulation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include "common/error.h"
#include "models/expert_parallel.h"
#include "models/time_model.h"
#include "sim/generators/registry.h"
#include "sim/pass_pairing.h"
#include "sim/port_sharing.h"
#include "sim/search/searched_schedule.h"
#include "step/profile_costs.h"
#include "step/searched_order.h"
#include "step/step_overhead.h"
#include "step/zero_support.h"

namespace pipeplan::step {
namespace {

// The schedule's cost with every stage-to-stage transfer instant: what is
// left of its idle time is the bubble.
double pipeline_without_p2p_s(const sim::Schedule& schedule, const ModelStageCosts& costs,
                              const models::HardwareConfig& hardware, const PipelineSetup& setup,
                              sim::SimulationOptions options) {
  sim::Topology topology = setup_topology(hardware, setup);
  // The passes as replayed (ports shared), the messages instant.
  const std::optional<sim::PipelineCosts> shared = sim::port_shared_costs(schedule, costs.costs, topology);
  sim::PipelineCosts instant = shared ? *shared : costs.costs;
  for (sim::StageCost& stage : instant.stages) stage.send_bytes = 0;
  topology.intra_node = topology.inter_node = sim::LinkSpec{};
  options.compute_critical_path = false;
  options.record_timeline = false;
  return sim::simulate(schedule, instant, topology, options).cost_s;
}

// Each rank's experts' communication over the step: what its actions carry,
// less what their overlapped pairs hide (sim::pair_saving is the time saved,
// at the slowdown's cost).
void add_expert_comm(ModelSimulation& result, const sim::Schedule& schedule, const sim::PipelineCosts& costs) {
  for (const auto& actions : schedule.actions) {
    double carried = 0, hidden = 0;
    for (std::size_t step = 0; step < actions.size(); ++step) {
      const sim::Action& action = actions[step];
      if (!sim::is_compute(action.kind)) continue;
      carried += sim::action_comm_s(costs.stages[static_cast<std::size_t>(action.stage)], action.kind);
      hidden += sim::paired_hidden_s(costs, actions, step);
    }
    result.expert_comm_s.push_back(carried - hidden);
    result.expert_comm_hidden_s.push_back(hidden);
  }
}

// Each rank's passes, ports shared less as costed.
void add_port_shared(ModelSimulation& result, const sim::Schedule& schedule, const sim::PipelineCosts& costed,
                     const sim::PipelineCosts& replayed) {
  for (const auto& actions : schedule.actions) {
    double lost = 0;
    for (const sim::Action& action : actions) {
      if (!sim::is_compute(action.kind)) continue;
      const auto stage = static_cast<std::size_t>(action.stage);
      lost += sim::action_duration_s(replayed.stages[stage], action.kind) -
              sim::action_duration_s(costed.stages[stage], action.kind);
    }
    result.port_shared_s.push_back(lost);
  }
}

MemoryBreakdown breakdown(const StaticMemory& memory, const sim::RankReport& rank) {
  MemoryBreakdown result;
  result.weights = memory.weights;
  result.gradients = memory.gradients;
  result.optimizer = memory.optimizer;
  result.buffers = memory.buffers;
  result.dispatcher_buffers = memory.dispatcher_buffers;
  result.logits = rank.peak_logits_bytes;
  result.activations = rank.peak_activation_bytes - rank.peak_logits_bytes;
  return result;
}

}  // namespace

std::int64_t ModelSimulation::peak_memory_bytes() const {
  std::int64_t peak = 0;
  for (const MemoryBreakdown& rank : memory) peak = std::max(peak, rank.total());
  return peak;
}

StepBounds step_bounds(const sim::Schedule& schedule, const sim::SpanBound& span,
                       const std::vector<RankMemoryProfile>& profiles, const ModelStageCosts& costs,
                       const StepOverhead& overhead) {
  StepBounds bounds;
  // Lowered by a part in 10^9: summed in another order than the replay's,
  // a tight bound (no bubble) could otherwise round above it.
  constexpr double kRounding = 1e-9;
  bounds.iteration_time_s =
      (span.lower_bound_s(costs.costs) + overhead.gradient_sync_s + overhead.optimizer_step_s) * (1 - kRounding);
  for (const double peak : profile_peak_bytes(schedule, profiles, costs)) {
    bounds.peak_bytes = std::max(bounds.peak_bytes, static_cast<std::int64_t>(peak));
  }
  return bounds;
}

std::vector<double> profile_peak_bytes(const sim::Schedule& schedule, const std::vector<RankMemoryProfile>& profiles,
                                       const ModelStageCosts& costs) {
  std::vector<double> peaks, full, partial;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const RankMemoryProfile& profile = profiles[static_cast<std::size_t>(rank)];
    full.clear();
    partial.clear();
    for (int stage : profile.stages) {
      const sim::StageCost& cost = costs.costs.stages[static_cast<std::size_t>(stage)];
      full.push_back(static_cast<double>(cost.activation_bytes));
      partial.push_back(static_cast<double>(cost.weight_grad_bytes));
    }
    peaks.push_back(static_cast<double>(costs.costs.static_bytes[static_cast<std::size_t>(rank)]) +
                    peak_activation_bytes(profile, full, partial));
  }
  return peaks;
}

ModelSimulation simulate_stage_costs(const sim::Schedule& schedule, const ModelStageCosts& costs, StageSplit split,
                                     const models::HardwareConfig& hardware, const PipelineSetup& setup,
                                     double model_flops, const sim::SimulationOptions& options) {
  const std::vector<RankPlatform> platforms(static_cast<std::size_t>(schedule.ranks), RankPlatform{&hardware, setup.shape});
  ModelSimulation result = simulate_rank_platforms(schedule, costs, std::move(split), platforms,
                                                   setup_topology(hardware, setup), setup, model_flops, options);
  const long long stride = setup.shape.stage_stride();
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    result.report.rank_nodes.push_back(static_cast<int>(rank * stride / std::max(1, hardware.gpus_per_node)));
  }
  result.report.memory_limit_bytes =
      setup.memory_cap_bytes > 0 ? setup.memory_cap_bytes : hardware.gpu.usable_memory_bytes();
  result.report.memory_limit_source =
      setup.memory_cap_bytes > 0 ? "the memory cap" : "usable memory per GPU of " + hardware.name;
  result.gpus = setup.shape.tp * setup.shape.cp * setup.pp * setup.shape.dp;
  result.mfu = model_flops * setup.microbatches * setup.shape.dp /
               (result.iteration_time_s * result.gpus * hardware.gpu.peak_flops_bf16);
  return result;
}

ModelSimulation simulate_rank_platforms(const sim::Schedule& schedule, const ModelStageCosts& costs, StageSplit split,
                                        const std::vector<RankPlatform>& platforms, const sim::Topology& topology,
                                        const PipelineSetup& setup, double model_flops,
                                        const sim::SimulationOptions& options) {
  if (platforms.size() != static_cast<std::size_t>(schedule.ranks)) {
    throw std::logic_error("one platform per pipeline rank");
  }
  sim::SimulationOptions run = options;
  run.recompute_in_bubbles = run.recompute_in_bubbles || setup.recompute_in_bubbles;
  // The pass times as the replay runs them, ports shared (what the experts'
  // account below must see too).
  const std::optional<sim::PipelineCosts> shared = sim::port_shared_costs(schedule, costs.costs, topology);
  const sim::PipelineCosts& replayed = shared ? *shared : costs.costs;
  ModelSimulation result{sim::simulate(schedule, replayed, topology, run), std::move(split), setup.shape.mtp_layers,
                         {}, {}};
  for (const sim::RankPort& port : topology.ports) result.report.rank_nodes.push_back(port.node);
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const StaticMemory& memory = costs.static_memory[static_cast<std::size_t>(rank)];
    result.memory.push_back(breakdown(memory, result.report.ranks_detail[static_cast<std::size_t>(rank)]));
  }
  add_expert_comm(result, schedule, replayed);
  add_port_shared(result, schedule, costs.costs, replayed);
  bool overlapped = false;
  std::map<const models::HardwareConfig*, int> kind_gpus;
  std::vector<std::int64_t> limits;
  for (std::size_t rank = 0; rank < platforms.size(); ++rank) {
    const RankPlatform& platform = platforms[rank];
    const StaticMemory& memory = costs.static_memory[rank];
    const StepOverhead overhead = rank_step_overhead(
        {static_cast<double>(memory.params), static_cast<double>(memory.expert_params),
         static_cast<double>(memory.fp8_params)},
        *platform.hardware, platform.shape);
    result.gradient_sync_s = std::max(result.gradient_sync_s, overhead.gradient_sync_s);
    result.optimizer_step_s = std::max(result.optimizer_step_s, overhead.optimizer_step_s);
    overlapped = overlapped || platform.shape.runtime.overlap_grad_reduce || platform.shape.runtime.overlap_param_gather;
    kind_gpus[platform.hardware] += platform.shape.tp * platform.shape.cp * platform.shape.dp;
    limits.push_back(setup.memory_cap_bytes > 0 ? setup.memory_cap_bytes
                                                : platform.hardware->gpu.usable_memory_bytes());
  }
  if (overlapped) result.gradient_sync_s += overlapped_sync_s(result.report, schedule, costs, result.split, platforms, topology);
  result.pipeline_s = result.report.cost_s;
  result.iteration_time_s = result.pipeline_s + result.gradient_sync_s + result.optimizer_step_s;
  // Each rank's kind: its own limit where the kinds' differ.
  result.report.memory_limit_bytes = *std::min_element(limits.begin(), limits.end());
  if (*std::max_element(limits.begin(), limits.end()) != result.report.memory_limit_bytes) {
    result.report.rank_memory_limit_bytes = limits;
  }
  result.report.memory_limit_source =
      setup.memory_cap_bytes > 0 ? "the memory cap" : "usable memory per GPU of each rank's kind";
  double peak_flops = 0;
  for (const auto& [hardware, gpus] : kind_gpus) {
    result.gpus += gpus;
    peak_flops += gpus * hardware->gpu.peak_flops_bf16;
  }
  const double samples = static_cast<double>(setup.shape.micro_batch_size) * setup.microbatches * setup.shape.dp;
  result.tokens_per_s = samples * setup.shape.seq_len / result.iteration_time_s;
  result.mfu = model_flops * setup.microbatches * setup.shape.dp / (result.iteration_time_s * peak_flops);
  return result;
}

sim::Schedule run_schedule(std::string_view name, sim::PipelineShape shape, bool moe_a2a_overlap) {
  sim::Schedule schedule = sim::generate_schedule(name, shape);
  if (moe_a2a_overlap && sim::pairs_forward_backward(sim::find_schedule_family(name).name, schedule.virtual_stages())) {
    sim::pair_forward_backward(schedule);
  }
  return schedule;
}

sim::Topology setup_topology(const models::HardwareConfig& hardware, const PipelineSetup& setup) {
  sim::Topology topology = pipeline_topology(hardware, setup.shape);
  if (setup.profile != nullptr && setup.profile->links) {
    const models::LinkProfile& links = *setup.profile->links;
    topology.intra_node = topology.inter_node = {links.latency_s, links.bandwidth_bytes_per_s};
    topology.tiers.clear();  // the measured link is every pair's
  }
  return topology;
}

namespace {

using ExpandLayers = std::function<models::ModelLayers(const models::TrainingShape&)>;

// A table of the layers as costed for `shape`: by the time model, or by the
// setup's profile (which adds what recomputation replays).
LayerTable costed_table(models::ModelLayers costed, const models::HardwareConfig& hardware, const PipelineSetup& setup,
                        const models::TrainingShape& shape) {
  if (setup.profile == nullptr) return LayerTable(costed, hardware, shape);
  const ProfiledCosts profiled = apply_profile(*setup.profile, setup.model_name, shape, hardware, costed);
  return LayerTable(costed, profiled.times);
}

// Each stage's table: the base one, or with per-stage recomputation the
// table of the stage's setting (each setting tabled once, in `variants`).
std::vector<const LayerTable*> stage_tables(const LayerTable& base, const PipelineSetup& setup, int stages,
                                            const ExpandLayers* expand, const models::HardwareConfig& hardware,
                                            std::vector<LayerTable>& variants) {
  if (setup.stage_recompute.empty()) return std::vector<const LayerTable*>(static_cast<std::size_t>(stages), &base);
  if (expand == nullptr) throw std::logic_error("per-stage recomputation needs the model to expand each setting");
  if (static_cast<int>(setup.stage_recompute.size()) != stages) {
    throw InputError(fmt::format("the per-stage recomputation names {} stages and the pipeline has {} (p x v)",
                                 setup.stage_recompute.size(), stages));
  }
  if (setup.explain) {
    throw InputError("--explain divides a step costed with one recomputation, and this one recomputes per stage: "
                     "give one --recompute setting, or drop --explain");
  }
  constexpr models::Recompute kSettings[] = {models::Recompute::kNone, models::Recompute::kSelective,
                                             models::Recompute::kFull};
  variants.reserve(std::size(kSettings));
  std::map<models::Recompute, std::size_t> index;
  for (models::Recompute setting : kSettings) {
    if (std::find(setup.stage_recompute.begin(), setup.stage_recompute.end(), setting) == setup.stage_recompute.end()) {
      continue;
    }
    models::TrainingShape shape = setup.shape;
    shape.recompute = setting;
    index[setting] = variants.size();
    variants.push_back(costed_table((*expand)(shape), hardware, setup, shape));
  }
  std::vector<const LayerTable*> tables;
  for (models::Recompute setting : setup.stage_recompute) tables.push_back(&variants[index.at(setting)]);
  return tables;
}

ModelSimulation simulate_expanded(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                                  const PipelineSetup& setup, const sim::SimulationOptions& options,
                                  const ExpandLayers* expand) {
  models::check_dispatcher(hardware, setup.shape);
  // ZeRO-2/3 sync per micro-batch or once per step as p decides: the layers
  // were expanded for the one the flag says.
  if (setup.shape.zero >= models::ZeroStage::kGradients && setup.shape.pipelined != (setup.pp > 1)) {
    throw std::logic_error("the training shape's pipelined flag must say whether p > 1");
  }
  check_zero_pipeline(setup.shape.zero, setup.pp, setup.schedule);
  if (setup.explain && setup.profile != nullptr) {
    throw InputError("--explain divides the time model's figures into their terms, and measured times (--profile) "
                     "have none: drop one of them");
  }
  const sim::ScheduleFamily& family = sim::find_schedule_family(setup.schedule);
  sim::Schedule schedule =
      sim::is_searched(family)
          ? sim::searched_schedule_shape(std::string(family.name), setup.pp, setup.microbatches)
          : run_schedule(setup.schedule,
                         {setup.pp, setup.microbatches, setup.virtual_stages, setup.microbatch_group_size},
                         setup.shape.runtime.moe_a2a_overlap);
  if (setup.shape.runtime.moe_a2a_overlap) {
    sim::check_pairs_forward_backward(sim::find_schedule_family(setup.schedule).name, schedule.virtual_stages());
  }
  StageSplit split = setup.split ? *setup.split : even_split(layers.transformer_layers(), schedule.stages);
  models::ModelLayers costed = layers;
  std::optional<ProfiledCosts> profiled;
  if (setup.profile != nullptr)
    profiled = apply_profile(*setup.profile, setup.model_name, setup.shape, hardware, costed);
  const LayerTable table = profiled ? LayerTable(costed, profiled->times) : LayerTable(costed, hardware, setup.shape);
  std::vector<LayerTable> variants;
  const ModelStageCosts costs = build_stage_costs(
      stage_tables(table, setup, schedule.stages, expand, hardware, variants), setup.shape, split, schedule);
  std::string schedule_note;
  if (sim::is_searched(family)) {
    check_no_bubble_recompute(std::string(family.name), setup.recompute_in_bubbles || options.recompute_in_bubbles);
    const bool capped = setup.memory_cap_bytes > 0;
    SearchedOrder order = search_order(
        std::string(family.name), costs.costs, setup_topology(hardware, setup), setup.microbatches,
        setup.activation_limit, capped ? setup.memory_cap_bytes : hardware.gpu.usable_memory_bytes(),
        capped ? "the memory cap" : "the usable memory per GPU of " + hardware.name, setup.activation_limit_source);
    schedule = std::move(order.schedule);
    schedule_note = std::move(order.note);
  }
  ModelSimulation result = simulate_stage_costs(schedule, costs, std::move(split), hardware, setup,
                                                models::model_flops_per_microbatch(layers, setup.shape), options);
  result.schedule_note = std::move(schedule_note);
  result.layers = rank_layer_names(table, result.split, schedule);
  if (setup.explain) {
    const PipelineTimes times{result.pipeline_s,
                              pipeline_without_p2p_s(schedule, costs, hardware, setup, options),
                              result.gradient_sync_s,
                              result.optimizer_step_s,
                              result.expert_comm_s,
                              result.port_shared_s};
    result.terms = step_terms(costed, hardware, setup.shape, result.split, schedule, result.report, times);
  }
  if (profiled) {
    result.cost_source = profile_source(setup.profile_file, *setup.profile, profiled->notes);
  } else if (const std::vector<std::string> assumed = models::hardware_assumptions(hardware); !assumed.empty()) {
    result.cost_source = fmt::format("analytical model ({})", fmt::join(assumed, "; "));
  }
  result.schedule = std::move(schedule);
  return result;
}

}  // namespace

ModelSimulation simulate_model(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                               const PipelineSetup& setup, const sim::SimulationOptions& options) {
  return simulate_expanded(layers, hardware, setup, options, nullptr);
}

ModelSimulation simulate_model(const models::ModelConfig& model, const models::HardwareConfig& hardware,
                               const PipelineSetup& setup, const sim::SimulationOptions& options) {
  const ExpandLayers expand = [&](const models::TrainingShape& shape) { return models::expand_layers(model, shape); };
  return simulate_expanded(expand(setup.shape), hardware, setup, options, &expand);
}

}  // namespace pipeplan::step
