// A training run under failures: how often to checkpoint and what share of
// the wall-clock time trains (goodput), in closed form for failures that
// arrive at a constant rate (exponential times between them).
#pragma once

#include <optional>
#include <string>

#include "models/reliability.h"
#include "planner/goodput/checkpoint.h"

namespace pipeplan::planner {

// The job's mean time between failures: every GPU's and every node's
// failures together (rates add).
double job_mtbf_s(const models::ReliabilityConfig& reliability, long long gpus, long long nodes);
// The nodes `gpus` occupy, `gpus_per_node` to a node (a part node counts).
long long job_nodes(long long gpus, int gpus_per_node);

// Young (1974): the compute between checkpoints that costs least to first
// order, sqrt(2 delta M), for a checkpoint of delta seconds.
double young_interval_s(double checkpoint_s, double mtbf_s);
// Daly (2006), eq. 37: the higher-order optimum, sqrt(2 delta M) (1 +
// sqrt(delta / 2M) / 3 + (delta / 2M) / 9) - delta for delta < 2M, else M.
double daly_interval_s(double checkpoint_s, double mtbf_s);
// Daly (2006), eq. 13: the expected wall-clock time of `work_s` of compute
// in segments of `interval_s`, each followed by a checkpoint of
// `checkpoint_s`, a failure costing the segment so far and a restart of
// `restart_s` (which may itself fail): M e^(R/M) (e^((tau + delta)/M) - 1)
// work / tau.
double expected_wall_s(double work_s, double interval_s, double checkpoint_s, double restart_s, double mtbf_s);

// The most tries a restart, or a checkpoint interval with its save, may
// need on average before one runs through without a failure: beyond it a
// job cannot progress (and runs of it would not end).
inline constexpr double kMostExpectedTries = 1e6;
// Weibull shapes of times between failures: published fits of HPC and
// GPU clusters lie within 0.5 to 1 (Schroeder and Gibson, DSN 2006: 0.7 to
// 0.8); outside [0.1, 20] the mean hides a distribution of no machine.
inline constexpr double kLeastWeibullShape = 0.1, kMostWeibullShape = 20;

// Expected tries until `length_s` passes without a failure, each try
// drawing its time to failure afresh from a Weibull distribution of `shape`
// with mean `mtbf_s`: 1 / survival, e^((length / scale)^shape) (inf past
// the range of a double).
double expected_tries(double length_s, double mtbf_s, double shape);
// "1.23e+04", or "more than 10^308" where a count overflows.
std::string format_tries(double tries);

// What a run needs from the plan and the cluster.
struct RunInputs {
  double step_s = 0;  // one training step, failure-free
  double tokens_per_step = 0;
  long long gpus = 0, nodes = 0;
  CheckpointCost checkpoint;
  models::ReliabilityConfig reliability;
  bool asynchronous = false;          // snapshot to host memory, write behind
  std::optional<int> interval_steps;  // none: Daly's optimum, in whole steps
  double tokens = 0;                  // the token budget (0: none given)
};

struct GoodputEstimate {
  double job_mtbf_s = 0;
  double restart_s = 0;            // relaunch, set-up, checkpoint load, warm-up steps
  double stall_s = 0;              // what each checkpoint stops training for
  double durable_after_s = 0;      // asynchronous: the write after the stall (0: synchronous)
  double young_s = 0, daly_s = 0;  // the optimum intervals, in compute seconds
  int interval_steps = 0;          // the interval used
  double interval_s = 0;
  double goodput = 0;             // training time over wall-clock time
  double checkpoint_share = 0;    // of the wall-clock time, spent checkpointing
  double lost_per_failure_s = 0;  // expected: the restart and the work redone
  double work_s = 0;              // the token budget's steps, failure-free (0 without one)
  double wall_s = 0;              // expected, with failures
  double effective_tokens_per_s = 0;
};

// Throws InputError where the interval is shorter than the checkpoint (its
// write, asynchronously), the token budget below one step, or the job cannot
// progress (a restart, or an interval and its save, needing more than
// kMostExpectedTries tries), naming the inputs that stop it.
GoodputEstimate estimate_goodput(const RunInputs& inputs);

}  // namespace pipeplan::planner
