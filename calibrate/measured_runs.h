// Measured training runs, as their authors configured them: the input of
// `pipeplan calibrate`. A runs file is a YAML map with `runs:`, a list of
// runs, each naming its model, hardware and parallel layout and giving its
// measured step time (optionally MFU and peak memory).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/job_layout.h"
#include "models/model_config.h"
#include "step/model_simulation.h"

namespace pipeplan::calibrate {

// The longest step a measured run may give: published steps take seconds to
// minutes (BLOOM's 104.7 s among the longest); a day is past any run a
// calibration can use, and keeps every error and fit finite.
inline constexpr double kMostMeasuredStepS = 86400;

struct MeasuredRun {
  std::string name;
  std::string place;  // "runs.yaml:12", where the run starts
  std::string source; // who measured it, where it was published
  std::string model;
  std::string hardware;
  int gpus = 0;
  int global_batch = 0;
  int seq = 0;
  // Its layout as the run's keys give it (vp: v; distributed_optimizer:
  // ZeRO-1; the schedule by default Interleaved1F1B when v > 1, else 1F1B),
  // with d and the micro-batches per replica from the GPUs and the batch.
  models::JobLayout job;
  std::string layout;  // Megatron's pipeline_model_parallel_layout, when the run gave one
  // A `pipeplan validate` run: the pipeline alone (t = d = 1, no optimizer
  // step), its split the plan's; its prediction is the pipeline's time.
  bool pipeline_only = false;
  std::optional<step::StageSplit> split;
  double step_time_s = 0;
  std::optional<double> mfu;                // measured, a fraction
  std::optional<double> peak_memory_bytes;  // measured, per GPU
};

// Reads and checks a runs file: every field known and in range, the layout
// dividing the GPUs and the global batch. Errors name the file and line.
std::vector<MeasuredRun> read_runs_yaml(const std::string& path);

// A runs YAML or a `pipeplan validate` comparison.json (told apart by the
// name's extension, .json).
std::vector<MeasuredRun> read_runs_file(const std::string& path);

// What a run's layout gives the simulator: data-parallel size and
// micro-batches per replica from the GPUs and the global batch.
step::PipelineSetup run_setup(const MeasuredRun& run, const models::ModelConfig& model);

}  // namespace pipeplan::calibrate
