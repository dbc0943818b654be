#include "planner/plan.h"

#include <fmt/format.h>

#include <string>

#include "models/recompute.h"

namespace pipeplan::planner {

models::TrainingShape candidate_shape(const PlanCandidate& candidate, int seq_len) {
  models::TrainingShape shape;
  shape.micro_batch_size = candidate.micro_batch_size;
  shape.seq_len = seq_len;
  shape.tp = candidate.tp;
  shape.cp = candidate.cp;
  shape.dp = candidate.dp;
  shape.ep = candidate.ep;
  shape.etp = candidate.etp;
  shape.moe_load_imbalance = candidate.moe_load_imbalance;
  shape.moe_capacity_factor = candidate.moe_capacity_factor;
  shape.moe_dispatcher = candidate.moe_dispatcher;
  shape.sequence_parallel = candidate.sequence_parallel;
  shape.recompute = candidate.recompute;
  shape.recompute_modules = candidate.recompute_modules;
  shape.zero = candidate.zero;
  shape.pipelined = candidate.pp > 1;
  shape.pipeline_first_ranks = candidate.pipeline_first ? candidate.pp : 0;
  shape.apply(candidate.runtime);
  return shape;
}

std::string candidate_recompute_label(const PlanCandidate& candidate) {
  const std::string label = candidate.stage_recompute.empty()
                                ? models::recompute_label(candidate.recompute, candidate.recompute_modules)
                                : models::stage_recompute_label(candidate.stage_recompute, candidate.recompute_modules);
  return candidate.recompute_in_bubbles ? label + " in bubbles" : label;
}

std::string candidate_schedule_label(const PlanCandidate& candidate) {
  return candidate.activation_limit ? fmt::format("{} {}", candidate.schedule, candidate.activation_limit->spelled())
                                    : candidate.schedule;
}

bool recomputes_selective(const PlanCandidate& candidate) {
  return models::recomputes_selective(candidate.recompute, candidate.stage_recompute);
}

void take_figures(const step::ModelSimulation& simulation, PlanCandidate& candidate) {
  candidate.split = simulation.split;
  candidate.iteration_time_s = simulation.iteration_time_s;
  candidate.tokens_per_s = simulation.tokens_per_s;
  candidate.mfu = simulation.mfu;
  candidate.bubble_rate = simulation.report.bubble_rate;
  candidate.peak_memory_bytes.clear();
  for (const step::MemoryBreakdown& rank : simulation.memory) candidate.peak_memory_bytes.push_back(rank.total());
  candidate.max_peak_bytes = simulation.peak_memory_bytes();
}

}  // namespace pipeplan::planner
