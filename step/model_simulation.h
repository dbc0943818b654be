// A model trained on hardware with a given pipeline, simulated: the
// schedule replayed on per-stage costs from the cost model, plus the
// data-parallel gradient synchronisation and the optimizer step, giving
// iteration time, tokens per second, MFU and every rank's memory breakdown.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware.h"
#include "models/job_layout.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/profile_file.h"
#include "models/training_shape.h"
#include "sim/generators/registry.h"
#include "sim/search/activation_limit.h"
#include "sim/simulate.h"
#include "sim/span_bound.h"
#include "step/layer_table.h"
#include "step/memory_profile.h"
#include "step/stage_costs.h"
#include "step/stage_split.h"
#include "step/step_overhead.h"
#include "step/step_terms.h"

namespace pipeplan::step {

// The pipeline's layout (p, v, micro-batches, schedule, per-stage
// recomputation) with the shape its ranks train with and how to cost it.
struct PipelineSetup : models::PipelineLayout {
  models::TrainingShape shape;   // micro-batch, sequence, t, d, SP, recompute, ZeRO
  int microbatch_group_size = 0;  // Interleaved1F1B's; 0: the generator's default
  std::optional<StageSplit> split;  // default: Megatron's even split
  // Measured costs in place of the time model (and its link fit, if any).
  const models::Profile* profile = nullptr;
  std::string profile_file;  // named in the cost source
  std::string model_name;    // checked against the profile's
  // Peak memory each GPU may use; 0: the hardware's usable memory.
  std::int64_t memory_cap_bytes = 0;
  // Break the step into the time model's terms (ModelSimulation::terms);
  // costs one more replay, with instant transfers.
  bool explain = false;
  // A searched schedule's limit on each rank's activations; none: what
  // the memory cap (or the GPU's usable memory) leaves beside static bytes.
  std::optional<sim::ActivationLimit> activation_limit;
  std::string activation_limit_source = "--activation-limit";  // what outputs call it
};

struct MemoryBreakdown {
  std::int64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, logits = 0, buffers = 0;
  std::int64_t dispatcher_buffers = 0;  // of buffers: DeepEP's, outside PyTorch's allocator
  std::int64_t total() const { return weights + gradients + optimizer + activations + logits + buffers; }
};

struct ModelSimulation {
  sim::SimulationReport report;
  StageSplit split{std::vector<int>{0, 1}};
  int mtp_layers = 0;  // multi-token prediction modules, run with the loss (its layout's 'm')
  std::vector<MemoryBreakdown> memory;           // per pipeline rank
  std::vector<std::vector<std::string>> layers;  // per pipeline rank (filled by simulate_model)
  double pipeline_s = 0;        // the schedule's cost (largest rank span)
  double gradient_sync_s = 0;   // data-parallel reduction of gradients, not overlapped
  double optimizer_step_s = 0;  // memory-bound parameter update
  // A mixture of experts' token dispatch and combine on each rank's compute
  // stream over the step: what stays exposed, and what paired passes hid.
  std::vector<double> expert_comm_s{};
  std::vector<double> expert_comm_hidden_s{};
  // Per rank, over the step: what its passes lost sharing the GPU's network
  // port with stage-to-stage messages (sim/port_sharing.h).
  std::vector<double> port_shared_s{};
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;               // model FLOPs / (time x GPUs x bf16 peak)
  int gpus = 0;
  std::string cost_source = "analytical model";
  std::vector<StepTerms> terms{};  // per pipeline rank, with PipelineSetup::explain
  sim::Schedule schedule{};        // the order replayed (filled by simulate_model)
  std::string schedule_note{};     // what a searched order was searched within; empty otherwise
  std::int64_t peak_memory_bytes() const;  // the largest rank's
};

// The schedule as the framework runs it: generated, and with the experts'
// all-to-all overlap (models::TrainingShape::moe_a2a_overlap) on a family
// that pairs (sim::pairs_forward_backward) each steady-state forward paired
// with a backward beside it.
sim::Schedule run_schedule(std::string_view name, sim::PipelineShape shape, bool moe_a2a_overlap);

// Bounds that need no replay, for pruning a search: the pipeline's cost
// no less than the schedule's span bound under these costs, plus the
// step's overhead; the peak memory from the schedule's memory profiles
// (the replay's own accounting, which depends on each rank's order only).
struct StepBounds {
  double iteration_time_s = 0;  // a lower bound
  std::int64_t peak_bytes = 0;  // the largest rank's peak, rounded down
};
StepBounds step_bounds(const sim::Schedule& schedule, const sim::SpanBound& span,
                       const std::vector<RankMemoryProfile>& profiles, const ModelStageCosts& costs,
                       const StepOverhead& overhead);

// Each rank's peak as the schedule's memory profiles give it: static bytes
// and the activations the rank's order holds at its worst point (the
// replay's own accounting).
std::vector<double> profile_peak_bytes(const sim::Schedule& schedule, const std::vector<RankMemoryProfile>& profiles,
                                       const ModelStageCosts& costs);

// The figures of one configuration from its stage costs. `model_flops` is
// per micro-batch over the whole model (models::model_flops_per_microbatch).
ModelSimulation simulate_stage_costs(const sim::Schedule& schedule, const ModelStageCosts& costs, StageSplit split,
                                     const models::HardwareConfig& hardware, const PipelineSetup& setup,
                                     double model_flops, const sim::SimulationOptions& options);

// simulate_stage_costs with each rank on its own platform and the links
// given (sim::Topology::ports where they differ). The memory limit is the
// cap, or each rank's kind's usable memory; MFU is over each kind's peak.
ModelSimulation simulate_rank_platforms(const sim::Schedule& schedule, const ModelStageCosts& costs,
                                        StageSplit split, const std::vector<RankPlatform>& platforms,
                                        const sim::Topology& topology, const PipelineSetup& setup,
                                        double model_flops, const sim::SimulationOptions& options);

// The links between pipeline ranks: the hardware's, or a profile's fit.
sim::Topology setup_topology(const models::HardwareConfig& hardware, const PipelineSetup& setup);

// Generates the schedule, costs the split (Megatron's even split unless
// given) from the time model or the setup's profile, and simulates. Throws
// InputError for impossible setups.
ModelSimulation simulate_model(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                               const PipelineSetup& setup, const sim::SimulationOptions& options = {});
// The same for a model expanded here, with its layers expanded once more
// for each recomputation setup.stage_recompute names (the overload above
// refuses one).
ModelSimulation simulate_model(const models::ModelConfig& model, const models::HardwareConfig& hardware,
                               const PipelineSetup& setup, const sim::SimulationOptions& options = {});

}  // namespace pipeplan::step
