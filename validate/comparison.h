// A real run beside its simulation: iteration time, bubble, and per rank
// busy and idle time and peak memory, measured against predicted, with
// errors; written as comparison.json, a Chrome trace holding both
// timelines, and a short summary.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "step/model_simulation.h"
#include "validate/rank_execution.h"

namespace pipeplan::validate {

// The CPU backend's bound (fp32). A check carries its own bound
// (GradientCheck::tolerance): judge a run with gradients_passed.
inline constexpr double kGradientTolerance = kFp32GradientTolerance;

struct RankComparison {
  int rank = 0;
  double measured_busy_s = 0, predicted_busy_s = 0;
  // The iteration (the largest rank span) less busy: idle ranks sum to the bubble.
  double measured_idle_s = 0, predicted_idle_s = 0;
  // Activations and tensors in flight, at their peak.
  std::int64_t measured_activation_bytes = 0, predicted_activation_bytes = 0;
  // Everything the rank allocates: fp32 weights and gradients (the executor
  // keeps no optimizer state) plus activations, transients and buffers.
  std::int64_t measured_peak_bytes = 0, predicted_peak_bytes = 0;
};

struct Comparison {
  std::string plan;
  std::string schedule;
  std::string backend;
  std::string cost_source;
  int ranks = 0;
  int microbatches = 0;
  std::vector<double> measured_iterations_s;  // every measured iteration
  int representative_iteration = 0;           // the median one: per-rank figures and the trace
  double measured_iteration_s = 0;            // median
  double predicted_iteration_s = 0;
  double iteration_error_pct = 0;  // (predicted - measured) / measured
  double measured_bubble_rate = 0;
  double predicted_bubble_rate = 0;
  // predicted - measured, in points of the step: a relative error of a
  // rate near zero (one rank, no bubble) says nothing.
  double bubble_error_points = 0;
  // Why the prediction is what it is: re-profiled on these ranks, and how
  // it differs from the figures the plan file carries.
  std::vector<std::string> notes;
  // How the run was made (iterations, warm-up, seed, timeout, ...).
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  std::vector<RankComparison> rank_figures;
  // The gradient check, when run: worst over ranks.
  std::optional<GradientCheck> gradients;
  std::optional<double> loss_relative_error;
};

// `measured` holds every rank's result; `predicted` the same plan simulated
// (with its timeline recorded, for the trace).
Comparison compare_runs(const std::vector<RankResult>& measured, const step::ModelSimulation& predicted);

// The gradient check (when run) stayed under its tolerance, in every
// gradient and in the loss; true when no check ran.
bool gradients_passed(const Comparison& comparison);

double error_pct(double predicted, double measured);
std::string comparison_json(const Comparison& comparison);
std::string comparison_summary(const Comparison& comparison);
// Measured ranks as processes 0..P-1, simulated ranks as P..2P-1.
std::string combined_trace_json(const std::vector<RankResult>& measured, const Comparison& comparison,
                                const sim::SimulationReport& predicted);

}  // namespace pipeplan::validate
