#include "sim/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "sim/dependency_graph.h"
#include "sim/engine.h"
#include "sim/lowering.h"
#include "sim/memory_observer.h"
#include "sim/offload.h"
#include "sim/port_sharing.h"
#include "sim/program_replay.h"
#include "sim/recompute_actions.h"
#include "sim/usage_observer.h"
#include "sim/validation.h"

namespace pipeplan::sim {
namespace {

void check_costs(const Schedule& schedule, const PipelineCosts& costs) {
  if (costs.stages.size() != static_cast<std::size_t>(schedule.stages) ||
      costs.static_bytes.size() != static_cast<std::size_t>(schedule.ranks)) {
    throw InputError(fmt::format("costs cover {} stages and {} ranks but the schedule has {} and {}",
                                 costs.stages.size(), costs.static_bytes.size(), schedule.stages, schedule.ranks));
  }
  for (std::size_t stage = 0; stage < costs.stages.size(); ++stage) {
    const StageCost& cost = costs.stages[stage];
    for (double time : {cost.forward_s, cost.backward_input_s, cost.backward_weight_s, cost.recompute_s,
                        cost.forward_network_s, cost.backward_input_network_s}) {
      if (!std::isfinite(time) || time < 0) {
        throw InputError(fmt::format("stage {} costs {} s for one of its passes; every time must be finite and >= 0",
                                     stage, time));
      }
    }
    if (cost.activation_bytes < 0 || cost.weight_grad_bytes < 0 || cost.send_bytes < 0 || cost.recompute_bytes < 0) {
      throw InputError(fmt::format("stage {} has negative byte counts; sizes must be >= 0", stage));
    }
  }
  // Memory is summed in 64 bits: every rank's static bytes plus all its
  // forwards' activations held at once must stay well inside.
  constexpr long double kMaxTotalBytes = 0x1p62L;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    long double held = static_cast<long double>(costs.static_bytes[static_cast<std::size_t>(rank)]);
    for (const Action& action : schedule.actions[static_cast<std::size_t>(rank)]) {
      if (action.kind == OpKind::kForward) {
        held += static_cast<long double>(costs.stages[static_cast<std::size_t>(action.stage)].activation_bytes);
      }
    }
    if (held > kMaxTotalBytes) {
      throw InputError(fmt::format("rank {} could hold {:.3g} bytes at once (static bytes and every forward's "
                                   "activations), over 2^62: lower the byte counts",
                                   rank, static_cast<double>(held)));
    }
  }
}

void fill_critical_path(const Schedule& lowered, const ActionIndex& index, const PipelineCosts& costs,
                        const Topology& topology, bool overlap, SimulationReport& report) {
  const DependencyGraph graph = build_dependency_graph(
      lowered, index, overlap ? CommSemantics::kOverlap : CommSemantics::kBlocking, {&costs, &topology});
  const EarliestStarts starts = earliest_starts(graph);
  report.critical_path_s = starts.length_s;
  for (std::uint32_t vertex : critical_path(starts)) {
    const Action& action = index.action_of_vertex(vertex);
    if (!is_compute(action.kind)) continue;
    const int rank = index.rank_of_vertex(vertex);
    if (report.critical_path.empty() || report.critical_path.back().rank != rank) {
      report.critical_path.push_back({rank, action, action, 0});
    }
    report.critical_path.back().last = action;
    ++report.critical_path.back().actions;
  }
}

void fill_rank_reports(const Schedule& schedule, const PipelineCosts& costs, const UsageObserver& usage,
                       const MemoryObserver& memory, SimulationReport& report) {
  double busy_total = 0;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const RankUsage& use = usage.ranks()[static_cast<std::size_t>(rank)];
    const RankMemory& mem = memory.ranks()[static_cast<std::size_t>(rank)];
    RankReport rank_report;
    rank_report.rank = rank;
    rank_report.busy_s = use.busy_s;
    rank_report.span_s = use.span_s();
    rank_report.first_start_s = use.active() ? use.first_start_s : 0;
    rank_report.last_end_s = use.last_end_s;
    rank_report.compute_actions = use.compute_actions;
    rank_report.peak_inflight_chunks = mem.peak_inflight_chunks;
    rank_report.peak_inflight_microbatches =
        static_cast<double>(mem.peak_inflight_chunks) * schedule.microbatch_scale / schedule.virtual_stages();
    rank_report.peak_activation_bytes = mem.peak_activation_bytes;
    rank_report.peak_logits_bytes = mem.logits_at_peak_bytes;
    rank_report.static_bytes = costs.static_bytes[static_cast<std::size_t>(rank)];
    rank_report.peak_memory_bytes = rank_report.static_bytes + mem.peak_activation_bytes;
    rank_report.peak_host_bytes = mem.peak_host_bytes;
    report.cost_s = std::max(report.cost_s, rank_report.span_s);
    report.ideal_s = std::max(report.ideal_s, use.busy_s);
    busy_total += use.busy_s;
    report.ranks_detail.push_back(rank_report);
  }
  report.stage_first_forward_s.clear();
  report.stage_grads_ready_s.clear();
  for (const StageUsage& stage : usage.stages()) {
    report.stage_first_forward_s.push_back(std::isfinite(stage.first_forward_s) ? stage.first_forward_s : 0);
    report.stage_grads_ready_s.push_back(stage.grads_ready_s);
  }
  // Idle against the iteration, not the rank's own span: waiting for the
  // first input and after the last output is bubble too.
  for (RankReport& rank_report : report.ranks_detail) {
    rank_report.idle_s = std::max(0.0, report.cost_s - rank_report.busy_s);  // drop rounding noise
  }
  const double capacity = report.cost_s * schedule.ranks;
  // Both are >= 0 by construction (cost >= every rank's busy time); the
  // clamp only drops rounding noise such as -1e-17.
  report.bubble_rate = capacity > 0 ? std::max(0.0, 1.0 - busy_total / capacity) : 0.0;
  report.bubble_over_ideal =
      report.ideal_s > 0 ? std::max(0.0, (report.cost_s - report.ideal_s) / report.ideal_s) : 0.0;
}

// Overlapped pairs run as their two halves, each waiting for its own input.
void unpair(Schedule& schedule) {
  for (auto& actions : schedule.actions) {
    for (Action& action : actions) action.overlapped = false;
  }
}

}  // namespace

SimulationReport simulate(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                          const SimulationOptions& options) {
  check_costs(schedule, costs);
  // Validate the form the user wrote (errors then show their actions); the
  // lowering of a valid compute-only schedule is valid by construction. A
  // compute-only schedule's deadlock shows in the linear replay below; the
  // dependency graph is built only to explain one, and for a schedule that
  // carries its own SEND/RECV (checked with blocking semantics).
  const bool compute_form = !schedule.has_comm();
  if (options.validate) {
    if (compute_form) {
      validate_structure(schedule);
    } else {
      validate_schedule(schedule);
    }
  }
  if (options.recompute_in_bubbles) {
    if (options.offload_activations) {
      throw InputError("recomputation in the bubbles with activation offload is not built (a RECOMPUTE would "
                       "wait for the reload of its checkpoint): use one of them");
    }
    const RecomputeActions apart = add_recompute_actions(schedule, costs);
    SimulationOptions rest = options;
    rest.recompute_in_bubbles = false;
    rest.validate = false;  // the schedule was; the RECOMPUTEs need only their own forwards
    SimulationReport report = simulate(apart.schedule, apart.costs, topology, rest);
    report.recompute_actions = apart.actions;
    return report;
  }
  // Messages and collectives that share a network port: the pass times
  // with the sharing in them (their network fields cleared, so once).
  if (const std::optional<PipelineCosts> shared = port_shared_costs(schedule, costs, topology)) {
    return simulate(schedule, *shared, topology, options);
  }
  SimulationReport report;
  report.schedule = schedule.name;
  report.placement = std::string(placement_name(schedule.stage_to_rank, schedule.ranks));
  report.ranks = schedule.ranks;
  report.stages = schedule.stages;
  report.virtual_stages = schedule.virtual_stages();
  report.microbatches = static_cast<int>(std::lround(schedule.microbatches * schedule.microbatch_scale));
  report.overlap_comm = options.overlap_comm;

  std::optional<Schedule> unpaired;
  if (!options.pair_overlapped) unpair(unpaired.emplace(schedule));
  const Schedule& replayed = unpaired ? *unpaired : schedule;
  UsageObserver usage(schedule.ranks, schedule.stages);
  MemoryObserver memory(costs, schedule.ranks, options.record_timeline);
  TimelineRecorder recorder;
  std::vector<EngineObserver*> observers{&usage, &memory};
  if (options.record_timeline) observers.push_back(&recorder);
  if (options.uncontended_links) {
    if (!options.overlap_comm) throw InputError("the uncontended replay assumes communication overlaps compute");
    const EngineResult result = replay_programs(replayed, costs, topology, observers);
    report.compute_actions = report.actions = schedule.compute_action_count();
    report.makespan_s = report.critical_path_s = result.makespan_s;
    fill_rank_reports(schedule, costs, usage, memory, report);
    if (options.record_timeline) report.timeline = recorder.take();
    return report;
  }
  // With overlap the uncontended replay is the longest path of the
  // dependency graph: one linear pass checks for a deadlock and gives the
  // critical path, and when no transfer in it waits for its link its times,
  // usage and memory are the engine's exactly, so the engine is not run.
  // Blocking communication, traces and charts (which show the transfers)
  // and queued links take the engine; blocking SENDs also need the lowered
  // graph for the path.
  if (options.offload_activations && !topology.has_host_link()) {
    throw InputError("activation offload copies over each GPU's host link, and none is given (the hardware's "
                     "host_link, or --host-bandwidth)");
  }
  const bool replay_first =
      compute_form && (options.validate || options.overlap_comm) && !options.offload_activations;
  if (replay_first) {
    CriticalPath path;
    LinkUse links;
    UsageObserver replay_usage(schedule.ranks, schedule.stages);
    MemoryObserver replay_memory(costs, schedule.ranks, false);
    std::vector<EngineObserver*> replay_observers{&replay_usage, &replay_memory};
    const bool with_path = options.overlap_comm && options.compute_critical_path;
    EngineResult result;
    try {
      result = replay_programs(replayed, costs, topology, replay_observers, {true, with_path ? &path : nullptr}, &links);
    } catch (const ScheduleError&) {
      validate_schedule(schedule);  // throws the explanation: the cycle and the grid
      throw;
    }
    if (with_path) {
      // The critical path is the dependency graph's, with links that never
      // queue: when some transfer queued, it takes a replay of its own.
      if (links.waited) replay_programs(replayed, costs, topology, {}, {false, &path});
      report.critical_path_s = path.length_s;
      report.critical_path = std::move(path.segments);
    }
    if (options.overlap_comm && !links.unordered && !options.record_timeline) {
      report.compute_actions = schedule.compute_action_count();
      report.actions = report.compute_actions + 2 * links.transfers;
      report.makespan_s = result.makespan_s;
      report.transfers = links.transfers;
      report.links = links.links;
      fill_rank_reports(schedule, costs, replay_usage, replay_memory, report);
      return report;
    }
  }
  // Lowered with its pairs (both SENDs after the pair, as PyTorch issues
  // them), then unpaired if the halves run in turn.
  Schedule lowered = lower_communication(schedule, options.recv_placement);
  if (!options.pair_overlapped) unpair(lowered);
  if (options.offload_activations) {
    lowered = add_host_copies(lowered);
    for (const auto& actions : lowered.actions) {
      report.host_copies += static_cast<std::size_t>(
          std::count_if(actions.begin(), actions.end(), [](const Action& a) { return is_host_copy(a.kind); }));
    }
  }
  report.compute_actions = lowered.compute_action_count();
  report.actions = lowered.action_count();
  const EngineResult result = run_engine(lowered, costs, topology, {options.overlap_comm}, observers);
  report.makespan_s = result.makespan_s;
  report.transfers = result.transfers;
  report.links = result.links;
  fill_rank_reports(schedule, costs, usage, memory, report);
  // The dependency graph has no host copies: with offload no path is given.
  if (options.compute_critical_path && !(compute_form && options.overlap_comm) && !options.offload_activations) {
    fill_critical_path(lowered, ActionIndex(lowered), costs, topology, options.overlap_comm, report);
  }
  if (options.record_timeline) {
    report.timeline = recorder.take();
    report.timeline->memory = std::move(memory.samples());
  }
  return report;
}

}  // namespace pipeplan::sim
