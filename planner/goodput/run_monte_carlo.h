// Training runs under failures drawn at random: each run computes its
// work in segments with a checkpoint after each, and on a failure loses
// what it computed since the last checkpoint that is safely written, then
// restarts (a restart may fail too). Seeded: run k draws from its own
// generator, so the figures are the same whatever the thread count.
#pragma once

#include <cstdint>
#include <vector>

namespace pipeplan::planner {

struct RunModel {
  double work_s = 0;           // compute the run needs, failure-free
  double interval_s = 0;       // compute between checkpoints (the last segment may be shorter)
  double stall_s = 0;          // what each checkpoint stops training for
  double durable_after_s = 0;  // after the stall, until the checkpoint is written (asynchronous; 0: at once)
  double restart_s = 0;
  double mtbf_s = 0;  // mean time between the job's failures
  // Times between failures: Weibull of this shape with mean mtbf_s (1:
  // exponential; below 1, failures come in bursts), drawn anew after each.
  double weibull_shape = 1;
  // Each failure takes a node out for `repair_s`. Hot spares: a pool of
  // `spares` idle nodes, one swapped in at a restart in `swap_s` more (-1:
  // every failed node replaced at once, at no cost). With none left the
  // job waits for a repaired node, or, given `replanned_slowdown` (entry k
  // - 1: the re-planned step time on k nodes fewer over the full job's),
  // restarts at once on the nodes it has and rejoins the others at its next
  // restart.
  int spares = -1;
  double node_out_share = 1;  // of the failures, those that take a node out (the rest restart on it)
  double swap_s = 0;
  double repair_s = 0;
  std::vector<double> replanned_slowdown = {};
};

struct RunDistribution {
  int runs = 0;
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0;
  double mean_failures = 0;
  double mean_waiting_s = 0;   // for a repaired node, no spare left
  double mean_degraded_s = 0;  // training on fewer nodes, re-planned
};

// Failures all runs together may meet on average: a bound on the work
// (about 10 s on one core).
inline constexpr double kMostSimulatedFailures = 2e8;

// Throws InputError for a model that cannot finish (no work, an interval
// shorter than the write it must wait for, a restart or a segment needing
// more than kMostExpectedTries tries, a Weibull shape outside its range) or
// whose runs would meet more than kMostSimulatedFailures failures.
RunDistribution simulate_runs(const RunModel& model, int runs, std::uint64_t seed, int threads);

// One run's wall-clock time and failures, from the generator seeded with
// `seed`.
struct RunOutcome {
  double wall_s = 0;
  int failures = 0;
  double waiting_s = 0;
  double degraded_s = 0;
};
RunOutcome simulate_run(const RunModel& model, std::uint64_t seed);

}  // namespace pipeplan::planner
