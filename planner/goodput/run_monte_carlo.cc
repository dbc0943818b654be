#include "planner/goodput/run_monte_carlo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.h"
#include "common/parallel.h"
#include "common/units.h"
#include "planner/goodput/goodput.h"

namespace pipeplan::planner {
namespace {

// SplitMix64 (Steele, Lea and Flood, 2014): spreads run indices into
// independent seeds.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Times between failures by inversion of the Weibull distribution, from
// the generator's raw bits (the same on every standard library).
class FailureClock {
 public:
  FailureClock(const RunModel& model, std::uint64_t seed)
      : engine_(seed), shape_(model.weibull_shape), scale_(model.mtbf_s / std::tgamma(1 + 1 / model.weibull_shape)) {}
  double next() {
    const double uniform = (static_cast<double>(engine_() >> 11) + 0.5) * 0x1p-53;  // in (0, 1)
    return scale_ * std::pow(-std::log(uniform), 1 / shape_);
  }

 private:
  std::mt19937_64 engine_;
  double shape_, scale_;
};

// A segment's time on the slowest nodes the job may run on, with its save.
double segment_s(const RunModel& model) {
  double slowest = 1;
  for (double slowdown : model.replanned_slowdown) slowest = std::max(slowest, slowdown);
  return model.interval_s * slowest + model.stall_s;
}

void check_model(const RunModel& model) {
  if (!(model.work_s > 0) || !(model.interval_s > 0) || !(model.mtbf_s > 0)) {
    throw InputError("a run needs work, an interval and a mean time between failures above 0");
  }
  if (!(model.weibull_shape >= kLeastWeibullShape && model.weibull_shape <= kMostWeibullShape)) {
    throw InputError(fmt::format("--weibull-shape: {} is outside [{}, {}]; 1 is exponential, below 1 failures bunch",
                                 model.weibull_shape, kLeastWeibullShape, kMostWeibullShape));
  }
  if (!(model.node_out_share >= 0 && model.node_out_share <= 1)) {
    throw InputError("the share of failures that take a node out must be within [0, 1]");
  }
  if (model.spares >= 0 && !(model.repair_s > 0)) {
    throw InputError("--repair: hot spares need the time a failed node takes to come back, above 0 (e.g. 3d)");
  }
  for (double slowdown : model.replanned_slowdown) {
    if (!(slowdown >= 1) || !std::isfinite(slowdown)) {
      throw InputError(
          fmt::format("a re-planned job on fewer nodes runs no faster: slowdown {} is not >= 1", slowdown));
    }
  }
  if (model.durable_after_s > model.interval_s) {
    throw InputError(
        fmt::format("the interval ({:.4g} s) is shorter than the checkpoint's write ({:.4g} s): the next "
                    "snapshot would start before it is written",
                    model.interval_s, model.durable_after_s));
  }
  // Runs that cannot progress would never end.
  const double restart_tries = expected_tries(model.restart_s + model.swap_s, model.mtbf_s, model.weibull_shape);
  const double segment_tries = expected_tries(segment_s(model), model.mtbf_s, model.weibull_shape);
  if (!(restart_tries <= kMostExpectedTries) || !(segment_tries <= kMostExpectedTries)) {
    throw InputError(
        fmt::format("the runs cannot progress: with failures every {} (Weibull shape {}), a restart of {} "
                    "needs {} tries to finish and a checkpoint interval with its save ({}) {} (at most "
                    "10^6 each)",
                    format_duration(model.mtbf_s), model.weibull_shape, format_duration(model.restart_s + model.swap_s),
                    format_tries(restart_tries), format_duration(segment_s(model)), format_tries(segment_tries)));
  }
}

// Failures a run meets on average: each segment's failed tries, each
// followed by a restart that may fail too (Daly's expected time over the
// MTBF, for exponential failures).
double expected_failures(const RunModel& model) {
  const double segments = std::ceil(model.work_s / model.interval_s);
  const double restart_tries = expected_tries(model.restart_s + model.swap_s, model.mtbf_s, model.weibull_shape);
  return segments * (expected_tries(segment_s(model), model.mtbf_s, model.weibull_shape) - 1) * restart_tries;
}

// The nodes a run can restart on: hot spares, and failed nodes back from
// repair. Unlimited (spares -1): every failed node is replaced at once.
class NodePool {
 public:
  explicit NodePool(const RunModel& model)
      : unlimited_(model.spares < 0), idle_(std::max(0, model.spares)), repair_s_(model.repair_s) {}
  void fail(double at) {
    if (!unlimited_) back_.push_back(at + repair_s_);  // failures come in time order: back_ stays sorted
  }
  void collect(double at) {
    while (head_ < back_.size() && back_[head_] <= at) {
      ++idle_;
      ++head_;
    }
  }
  // Up to `wanted` idle nodes into the job: how many it got.
  int take(int wanted) {
    if (unlimited_) return wanted;
    const int taken = std::min(wanted, idle_);
    idle_ -= taken;
    return taken;
  }
  double next_back() const { return back_[head_]; }

 private:
  bool unlimited_;
  int idle_;
  double repair_s_;
  std::vector<double> back_;
  std::size_t head_ = 0;
};

double percentile(const std::vector<double>& sorted, double share) {
  const auto rank = static_cast<std::size_t>(std::ceil(share * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

// One run of a checked model.
RunOutcome run_once(const RunModel& model, std::uint64_t seed) {
  FailureClock clock(model, seed);
  NodePool pool(model);
  const auto segments = static_cast<long long>(std::ceil(model.work_s / model.interval_s - 1e-9));
  const double last = model.work_s - static_cast<double>(segments - 1) * model.interval_s;
  RunOutcome outcome;
  double now = 0, failure_at = clock.next();
  long long next = 0;       // the segment to compute
  long long committed = 0;  // segments safely checkpointed
  long long pending = -1;   // segments a checkpoint in flight will commit (-1: none)
  double pending_at = 0;    // when it will have
  int missing = 0;          // nodes the job runs without (re-planned)
  // Whether a failure takes its node out: drawn from a stream of its own,
  // so that the failure times are the same whatever the share.
  std::mt19937_64 causes(mix(~seed));
  const auto node_out = [&] {
    if (model.node_out_share >= 1) return true;
    return (static_cast<double>(causes() >> 11) + 0.5) * 0x1p-53 < model.node_out_share;
  };
  const auto settle = [&](double at) {
    if (pending >= 0 && pending_at <= at) {
      committed = pending;
      pending = -1;
    }
  };
  // After a failure at `now`: nodes back, spares in, or a wait or a
  // smaller job; then the restart, which a failure may cut short.
  const auto restart = [&] {
    for (;;) {
      if (node_out()) {
        pool.fail(now);
        ++missing;
      }
      double cost = model.restart_s;
      for (;;) {
        pool.collect(now);
        const int taken = pool.take(missing);
        missing -= taken;
        if (taken > 0) cost += model.swap_s;
        if (missing == 0 || missing <= static_cast<int>(model.replanned_slowdown.size())) break;
        // Down until a node is back: the clock starts again with the job.
        const double back = pool.next_back();
        outcome.waiting_s += back - now;
        now = back;
        failure_at = now + clock.next();
      }
      if (now + cost <= failure_at) {
        now += cost;
        return;
      }
      ++outcome.failures;
      now = failure_at;
      failure_at = now + clock.next();
    }
  };
  while (next < segments) {
    const double slow = missing > 0 ? model.replanned_slowdown[static_cast<std::size_t>(missing - 1)] : 1.0;
    const double length = (next + 1 == segments ? last : model.interval_s) * slow + model.stall_s;
    // Whole segments before the failure at once (all but the last are alike).
    const long long room = static_cast<long long>(std::floor((failure_at - now) / length));
    const long long run = next + 1 == segments ? std::min<long long>(room, 1) : std::min(room, segments - 1 - next);
    if (run >= 1) {
      now += static_cast<double>(run) * length;
      if (missing > 0) outcome.degraded_s += static_cast<double>(run) * length;
      next += run;
      // Each checkpoint's write ends before the next snapshot starts.
      committed = std::max(committed, next - 1);
      pending = next;
      pending_at = now + model.durable_after_s;
      settle(now);
      continue;
    }
    // A failure: back to the last checkpoint written by then, and restart.
    settle(failure_at);
    ++outcome.failures;
    if (missing > 0) outcome.degraded_s += failure_at - now;
    pending = -1;
    next = committed;
    now = failure_at;
    failure_at = now + clock.next();
    restart();
  }
  outcome.wall_s = now;
  return outcome;
}

}  // namespace

RunOutcome simulate_run(const RunModel& model, std::uint64_t seed) {
  check_model(model);
  return run_once(model, seed);
}

RunDistribution simulate_runs(const RunModel& model, int runs, std::uint64_t seed, int threads) {
  check_model(model);
  if (runs < 1) throw InputError("--runs: give at least 1 run");
  const double expected = expected_failures(model) * runs;
  if (!(expected <= kMostSimulatedFailures)) {
    throw InputError(
        fmt::format("--runs: {} runs of {} training meet about {:.3g} failures in all, more than the {:.0e} "
                    "the Monte Carlo plays out; give fewer --runs or a shorter --run-length",
                    runs, format_duration(model.work_s), expected, kMostSimulatedFailures));
  }
  std::vector<RunOutcome> outcomes(static_cast<std::size_t>(runs));
  parallel_for(outcomes.size(), threads, [&](std::size_t run) { outcomes[run] = run_once(model, mix(seed + run)); });
  std::vector<double> walls;
  walls.reserve(outcomes.size());
  double failures = 0, waiting = 0, degraded = 0;
  for (const RunOutcome& outcome : outcomes) {
    walls.push_back(outcome.wall_s);
    failures += outcome.failures;
    waiting += outcome.waiting_s;
    degraded += outcome.degraded_s;
  }
  RunDistribution distribution;
  distribution.runs = runs;
  distribution.mean_s = std::accumulate(walls.begin(), walls.end(), 0.0) / runs;
  distribution.mean_failures = failures / runs;
  distribution.mean_waiting_s = waiting / runs;
  distribution.mean_degraded_s = degraded / runs;
  std::sort(walls.begin(), walls.end());
  distribution.p50_s = percentile(walls, 0.5);
  distribution.p90_s = percentile(walls, 0.9);
  distribution.p99_s = percentile(walls, 0.99);
  return distribution;
}

}  // namespace pipeplan::planner
