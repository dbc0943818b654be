// A plan file made ready to run for real: its model, hardware, shape,
// schedule (with communication) and split, checked against the ranks
// launched and the memory of the device before anything runs.
#pragma once

#include <cstdint>
#include <string>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/training_shape.h"
#include "planner/plan_file.h"
#include "sim/schedule.h"
#include "step/model_simulation.h"
#include "step/stage_split.h"

namespace pipeplan::validate {

struct ValidationPlan {
  std::string path;
  planner::PlanFile file;
  models::ModelConfig model;
  models::HardwareConfig hardware;
  models::TrainingShape shape;  // of one schedule micro-batch (the naive schedule's carries the whole batch)
  sim::Schedule lowered;  // a searched order's: its shape, without actions, until shared
  step::StageSplit split{std::vector<int>{0, 1}};
  bool searched_order = false;  // ZBAuto: the order comes from rank 0's prediction
};

// Reads the plan and refuses, with the fix named, what cannot run here:
// a rank count other than the plan's, tensor or data parallelism on the
// cpu backend, a backend other than cpu or cuda.
ValidationPlan prepare_validation(const std::string& plan_path, int launched_ranks, const std::string& backend);

// The plan simulated (timeline recorded) with `profile`'s costs, or the
// time model's when null.
step::ModelSimulation predict(const ValidationPlan& plan, const models::Profile* profile,
                              const std::string& profile_file);

// Refuses a plan whose ranks do not fit: the plan's device memory as its
// hardware describes it, and the memory this process can have for real
// (`available_bytes` per rank; 0 skips that check).
void check_memory(const ValidationPlan& plan, const step::ModelSimulation& predicted, std::int64_t available_bytes);

// MemAvailable from /proc/meminfo divided among the ranks on this host.
std::int64_t available_bytes_per_rank(int ranks_on_host);

}  // namespace pipeplan::validate
