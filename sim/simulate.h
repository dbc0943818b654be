// One call from a schedule and its costs to every figure pipeplan reports:
// lower, validate, replay, account. The planner calls this same function,
// so a plan's numbers are the simulator's numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/costs.h"
#include "sim/critical_path.h"
#include "sim/lowering.h"
#include "sim/schedule.h"
#include "sim/timeline.h"
#include "sim/topology.h"

namespace pipeplan::sim {

struct SimulationOptions {
  bool overlap_comm = true;
  bool validate = true;             // off only for schedules known to be valid
  bool compute_critical_path = true;
  bool record_timeline = false;     // for traces and charts
  // Replay without the event queue, every link free when a transfer is
  // issued (replay_programs): the dependency graph's timing, which no
  // contention can beat. Needs overlap_comm; reports no transfers or
  // critical path segments (the critical path equals the makespan).
  bool uncontended_links = false;
  // Where the lowering puts each RECV. Only blocking communication
  // (overlap_comm false) waits at a RECV; with overlap the wait is at the
  // compute that needs the data, wherever the RECV sits.
  RecvPlacement recv_placement = RecvPlacement::kBeforeUse;
  // An overlapped F&B pair (DualPipeV, OVERLAP_F_B) starts as one unit once
  // both inputs are there; false runs its halves one after the other, each
  // waiting for its own input, as PyTorch's default runtime does.
  bool pair_overlapped = true;
  // Offload waiting activations to host memory over the topology's host
  // link (sim/offload.h); runs the engine, without a critical path.
  bool offload_activations = false;
  // Run each recomputing stage's recomputation as RECOMPUTE actions ahead
  // of their backwards (sim/recompute_actions.h).
  bool recompute_in_bubbles = false;
};

struct RankReport {
  int rank = 0;
  double busy_s = 0;   // compute time
  double span_s = 0;   // first activity to last
  double idle_s = 0;   // the iteration (cost) less busy: the ranks' idle times sum to the bubble
  double first_start_s = 0;
  double last_end_s = 0;
  std::size_t compute_actions = 0;
  int peak_inflight_chunks = 0;
  double peak_inflight_microbatches = 0;  // chunks / v
  std::int64_t peak_activation_bytes = 0;
  std::int64_t peak_logits_bytes = 0;  // the logits share of peak_activation_bytes
  std::int64_t static_bytes = 0;
  std::int64_t peak_memory_bytes = 0;  // static + peak activations
  std::int64_t peak_host_bytes = 0;    // offloaded activations held in host memory at most
};


struct SimulationReport {
  std::string schedule;
  std::string placement;  // loop, v or custom
  int ranks = 0;
  int stages = 0;
  int virtual_stages = 0;
  int microbatches = 0;  // the user's micro-batches (naive runs them as one)
  bool overlap_comm = true;

  double makespan_s = 0;           // first start to last end, all ranks
  double cost_s = 0;               // max over ranks of its span
  double ideal_s = 0;              // max over ranks of its busy time
  double bubble_rate = 0;          // 1 - sum(busy) / (ranks x cost)
  double bubble_over_ideal = 0;    // (cost - ideal) / ideal
  double critical_path_s = 0;      // longest path, links uncontended
  std::vector<CriticalSegment> critical_path;  // first to last

  std::size_t compute_actions = 0;
  std::size_t actions = 0;  // lowered, comm included
  std::size_t transfers = 0;  // host copies included
  int links = 0;              // host links included
  std::size_t host_copies = 0;  // OFFLOAD and RELOAD (SimulationOptions::offload_activations)
  std::size_t recompute_actions = 0;  // RECOMPUTE (SimulationOptions::recompute_in_bubbles), of compute_actions
  std::vector<RankReport> ranks_detail;
  // Per stage: when its first forward starts and when its weight gradients
  // are final (its last B or W ends).
  std::vector<double> stage_first_forward_s;
  std::vector<double> stage_grads_ready_s;
  std::optional<Timeline> timeline;
  // The node each rank runs on (the first pipeline's GPUs), where the
  // hardware places them; empty otherwise. The trace labels ranks with it.
  std::vector<int> rank_nodes;

  // The memory each rank may use (sim/memory_fit.h); 0: none was given.
  std::int64_t memory_limit_bytes = 0;
  std::string memory_limit_source;  // "usable memory of h100-sxm", "--memory-cap"
  // Where ranks differ (GPU kinds of their own), each rank's limit;
  // memory_limit_bytes is then the smallest. Empty: memory_limit_bytes for all.
  std::vector<std::int64_t> rank_memory_limit_bytes;
  std::int64_t memory_limit_of(int rank) const {
    return rank_memory_limit_bytes.empty() ? memory_limit_bytes
                                           : rank_memory_limit_bytes[static_cast<std::size_t>(rank)];
  }
};

// `schedule` may be compute-only (it is lowered here) or lowered.
SimulationReport simulate(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                          const SimulationOptions& options = {});

}  // namespace pipeplan::sim
