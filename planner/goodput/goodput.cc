#include "planner/goodput/goodput.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/units.h"

namespace pipeplan::planner {

double job_mtbf_s(const models::ReliabilityConfig& reliability, long long gpus, long long nodes) {
  const double rate =
      static_cast<double>(gpus) / reliability.gpu_mtbf_s + static_cast<double>(nodes) / reliability.node_mtbf_s;
  return 1 / rate;
}

long long job_nodes(long long gpus, int gpus_per_node) { return (gpus + gpus_per_node - 1) / gpus_per_node; }

double young_interval_s(double checkpoint_s, double mtbf_s) { return std::sqrt(2 * checkpoint_s * mtbf_s); }

double daly_interval_s(double checkpoint_s, double mtbf_s) {
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;
  const double ratio = checkpoint_s / (2 * mtbf_s);
  return std::sqrt(2 * checkpoint_s * mtbf_s) * (1 + std::sqrt(ratio) / 3 + ratio / 9) - checkpoint_s;
}

double expected_wall_s(double work_s, double interval_s, double checkpoint_s, double restart_s, double mtbf_s) {
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + checkpoint_s) / mtbf_s) * work_s / interval_s;
}

double expected_tries(double length_s, double mtbf_s, double shape) {
  const double scale = mtbf_s / std::tgamma(1 + 1 / shape);
  return std::exp(std::pow(length_s / scale, shape));
}

std::string format_tries(double tries) {
  return std::isfinite(tries) ? fmt::format("{:.3g}", tries) : std::string("more than 10^308");
}

namespace {

// Refuses a job that cannot progress, naming what stops it: a restart
// that a failure nearly always cuts short, or an interval with its save
// that one nearly always does.
void check_progress(const RunInputs& inputs, const GoodputEstimate& estimate) {
  const double mtbf = estimate.job_mtbf_s;
  const double restart_tries = expected_tries(estimate.restart_s, mtbf, 1);
  if (!(restart_tries <= kMostExpectedTries)) {
    const models::ReliabilityConfig& reliability = inputs.reliability;
    throw InputError(fmt::format(
        "the job cannot progress: a restart takes {} (reliability.relaunch {}, init {}, checkpoint load {}, "
        "warmup_steps {}) and the job fails every {} on average, so one restart needs {} tries to finish (at most "
        "10^6); shorten relaunch or init, or raise gpu_mtbf or node_mtbf",
        format_duration(estimate.restart_s), format_duration(reliability.relaunch_s),
        format_duration(reliability.init_s), format_duration(inputs.checkpoint.read_s), reliability.warmup_steps,
        format_duration(mtbf), format_tries(restart_tries)));
  }
  const double segment_tries = expected_tries(estimate.interval_s + estimate.stall_s, mtbf, 1);
  if (segment_tries <= kMostExpectedTries) return;
  const double one_step = std::max(inputs.step_s, estimate.durable_after_s) + estimate.stall_s;
  if (inputs.interval_steps && expected_tries(one_step, mtbf, 1) <= kMostExpectedTries) {
    throw InputError(
        fmt::format("--interval-steps: {} steps ({}) and their save ({}) need {} tries to run through "
                    "between failures every {} (at most 10^6); checkpoint more often",
                    estimate.interval_steps, format_duration(estimate.interval_s), format_duration(estimate.stall_s),
                    format_tries(segment_tries), format_duration(mtbf)));
  }
  throw InputError(fmt::format(
      "the job cannot progress: checkpoint intervals of {} and their save ({}) need {} tries to run through between "
      "failures every {} on average (at most 10^6); raise storage_write or storage_write_total, or gpu_mtbf or "
      "node_mtbf",
      format_duration(estimate.interval_s), format_duration(estimate.stall_s), format_tries(segment_tries),
      format_duration(mtbf)));
}

}  // namespace

GoodputEstimate estimate_goodput(const RunInputs& inputs) {
  GoodputEstimate estimate;
  const models::ReliabilityConfig& reliability = inputs.reliability;
  estimate.job_mtbf_s = job_mtbf_s(reliability, inputs.gpus, inputs.nodes);
  estimate.restart_s =
      reliability.relaunch_s + reliability.init_s + inputs.checkpoint.read_s + reliability.warmup_steps * inputs.step_s;
  estimate.stall_s = inputs.asynchronous ? inputs.checkpoint.snapshot_s : inputs.checkpoint.write_s;
  estimate.durable_after_s = inputs.asynchronous ? inputs.checkpoint.write_s : 0;
  estimate.young_s = young_interval_s(estimate.stall_s, estimate.job_mtbf_s);
  estimate.daly_s = daly_interval_s(estimate.stall_s, estimate.job_mtbf_s);
  // A snapshot may not start before the write of the one before ends.
  const double shortest = std::max(estimate.durable_after_s, inputs.step_s);
  if (inputs.interval_steps) {
    estimate.interval_steps = *inputs.interval_steps;
    const double interval = estimate.interval_steps * inputs.step_s;
    const double needed = inputs.asynchronous ? estimate.durable_after_s : estimate.stall_s;
    if (interval < needed) {
      throw InputError(
          fmt::format("--interval: {} step(s) train {} and the checkpoint {} takes {}; checkpoint every "
                      "{} steps or more",
                      estimate.interval_steps, format_duration(interval), inputs.asynchronous ? "write" : "save",
                      format_duration(needed), static_cast<long long>(std::ceil(needed / inputs.step_s))));
    }
  } else {
    // Whole steps: the better of the two around the optimum.
    const double best = std::max(estimate.daly_s, shortest);
    const int below = std::max(1, static_cast<int>(std::floor(best / inputs.step_s)));
    const auto cost = [&](int steps) {
      return expected_wall_s(1, steps * inputs.step_s, estimate.stall_s, estimate.restart_s, estimate.job_mtbf_s);
    };
    int steps = cost(below + 1) < cost(below) ? below + 1 : below;
    while (steps * inputs.step_s < shortest) ++steps;
    estimate.interval_steps = steps;
  }
  estimate.interval_s = estimate.interval_steps * inputs.step_s;
  check_progress(inputs, estimate);
  const double wall_per_work =
      expected_wall_s(1, estimate.interval_s, estimate.stall_s, estimate.restart_s, estimate.job_mtbf_s);
  estimate.goodput = 1 / wall_per_work;
  // One checkpoint per interval of training (those cut short by a failure
  // left out).
  estimate.checkpoint_share = estimate.stall_s / estimate.interval_s * estimate.goodput;
  // Per failure: the restart (failures during it start it again) and the
  // segment's time before the failure.
  const double mtbf = estimate.job_mtbf_s;
  const double segment = estimate.interval_s + estimate.stall_s;
  estimate.lost_per_failure_s =
      mtbf * std::expm1(estimate.restart_s / mtbf) + mtbf - segment / std::expm1(segment / mtbf);
  estimate.effective_tokens_per_s = inputs.tokens_per_step / inputs.step_s * estimate.goodput;
  if (inputs.tokens > 0) {
    if (inputs.tokens < inputs.tokens_per_step) {
      throw InputError(fmt::format("--tokens: {:.4g} is below one step's {:.4g} tokens; give a budget of whole steps",
                                   inputs.tokens, inputs.tokens_per_step));
    }
    estimate.work_s = std::ceil(inputs.tokens / inputs.tokens_per_step) * inputs.step_s;
    estimate.wall_s = estimate.work_s * wall_per_work;
  }
  return estimate;
}

}  // namespace pipeplan::planner
