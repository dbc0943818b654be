#include "planner/plan.h"

#include <fmt/format.h>

#include <string>

#include "models/recompute.h"

namespace pipeplan::planner {

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
