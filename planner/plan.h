// The plan vocabulary: what a user asks for (PlanRequest), one costed
// layout of the job (PlanCandidate) and what a search returns
// (PlanSearchResult), with the labels outputs give a candidate. The
// search itself is planner/search/plan_search.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/profile_file.h"
#include "models/job_layout.h"
#include "models/training_shape.h"
#include "sim/search/activation_limit.h"
#include "step/framework_support.h"
#include "step/model_simulation.h"
#include "step/partitioner.h"
#include "step/stage_split.h"

namespace pipeplan::planner {

// Throughput: tokens per second; memory: the lowest peak; goodput: tokens
// per second once failures, restarts and checkpoints are counted.
enum class Objective { kThroughput, kMemory, kGoodput };

struct PlanRequest {
  models::ModelConfig model;
  models::HardwareConfig hardware;
  int gpus = 0;
  int global_batch = 0;  // sequences per iteration
  int seq_len = 0;
  double memory_cap_bytes = 0;  // 0: the GPU's usable memory
  // Fixed choices; unset ones are searched (sequence parallelism defaults
  // to on with t > 1, the distributed optimizer to on with d > 1).
  std::optional<int> tp, cp, pp, dp, micro_batch_size, virtual_stages;
  // A given tp may span NVLink domains (its collectives then cost the network's rate).
  bool allow_cross_node_tp = false;
  // Megatron's rank order: false the default (tp-cp-ep-dp-pp), true
  // tp-pp-dp (--use-tp-pp-dp-mapping); not given: both where they differ.
  std::optional<bool> rank_order;
  // Mixture of experts: expert-parallel and expert tensor-parallel sizes
  // (searched: every ep dividing the experts and t x c x d / etp, etp 1 or t),
  // and the routing's load (models::TrainingShape).
  std::optional<int> ep, etp;
  models::MoeRouting routing;
  // Multi-token prediction modules trained (fixed, not searched): with the
  // loss, and context parallelism off (models::JobLayout::mtp_layers).
  int mtp_layers = 0;
  std::optional<std::string> schedule;
  std::optional<models::Recompute> recompute;
  // Also try each recomputing candidate of a generated schedule with its
  // recomputation run apart in the bubbles (sim/recompute_actions.h).
  bool recompute_in_bubbles = false;
  // Megatron's --recompute-modules (RecomputeModule bits): selective with these.
  std::optional<unsigned> recompute_modules;
  std::optional<bool> sequence_parallel;
  std::optional<models::ZeroStage> zero;
  // How the framework runs: each flag is applied to the candidates it
  // applies to (models::TrainingShape::apply).
  models::RuntimeFlags runtime;
  // A user's own split, evaluated as given: blocks per stage, or a Megatron
  // layout string. Candidates with another stage count are skipped.
  std::optional<std::vector<int>> layer_counts;
  std::optional<std::string> layout;
  // Measured costs in place of the time model; its t is the only one tried.
  std::optional<models::Profile> profile;
  std::string profile_file;
  step::PartitionMethod partition = step::PartitionMethod::kMemory;
  // The memory-aware split may let the slowest stage grow by this fraction
  // to lower the largest stage's peak memory.
  double balance_slack = 0.005;
  Objective objective = Objective::kThroughput;
  int threads = 0;  // 0: all cores
  // The framework whose layouts the search keeps to (step/framework_support.h);
  // kAny: every layout, and the best each framework runs is tracked too.
  step::Framework framework = step::Framework::kAny;
  // Skip the replay of candidates whose bounds show they can reach neither
  // the top nor the Pareto front (exact: the result is the same without it).
  bool prune = true;
};

// One layout of the job (models::JobLayout: every knob set), with the
// split and the figures its replay gave.
struct PlanCandidate : models::JobLayout {
  // A searched order's limit on each rank's activations beside the cap
  // (ScheduleChoice::activation_limit); none: the cap's alone.
  std::optional<sim::ActivationLimit> activation_limit;
  step::StageSplit split{std::vector<int>{0, 1}};
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double bubble_rate = 0;
  // With Objective::kGoodput: the share of the time it trains, and its
  // tokens per second at that share (0 otherwise).
  double goodput = 0;
  double effective_tokens_per_s = 0;
  std::vector<std::int64_t> peak_memory_bytes;  // per pipeline rank
  std::int64_t max_peak_bytes = 0;
  // The frameworks that run it as planned (step::frameworks_running).
  step::FrameworkSet frameworks = 0;
};

struct PlanSearchResult {
  std::vector<std::string> warnings;  // the request is served, but something in it deserves a look
  std::vector<PlanCandidate> ranked;  // best first, by the objective; at most top_k
  std::vector<PlanCandidate> pareto;  // iteration time against peak memory, fastest first
  // With PlanRequest::framework kAny: the best plan each framework runs
  // (indexed as step::frameworks()), none where it runs none that fits.
  std::array<std::optional<PlanCandidate>, step::kFrameworkCount> framework_best;
  std::map<std::string, std::size_t> rejected;  // reason -> count
  std::size_t candidates_evaluated = 0;  // fully costed by the simulator
  std::size_t candidates_pruned = 0;     // skipped: their bounds could not beat what was found
  double search_time_s = 0;
  double memory_cap_bytes = 0;
  // The smallest peak found, fitting or not (each candidate with the split
  // that minimises its largest stage memory when none fits the cap).
  std::optional<PlanCandidate> lowest_peak;
};

// What outputs call its recomputation: recompute_label, or with per-stage
// recomputation models::stage_recompute_label; " in bubbles" after it
// where it runs apart.
std::string candidate_recompute_label(const PlanCandidate& candidate);
// What outputs call its schedule: the name, with a searched order's
// activation limit ("ZBAuto 2p").
std::string candidate_schedule_label(const PlanCandidate& candidate);

// Copies a simulation's figures (time, throughput, memory) into a candidate.
void take_figures(const step::ModelSimulation& simulation, PlanCandidate& candidate);

}  // namespace pipeplan::planner
