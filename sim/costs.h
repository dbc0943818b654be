// What each action costs: time on the rank's compute stream, activation
// memory it holds or frees, and bytes it sends to a neighbouring stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/schedule.h"

namespace pipeplan::sim {

// Costs of one stage (one model chunk) for one schedule micro-batch.
struct StageCost {
  double forward_s = 0;
  double backward_input_s = 0;   // I; a full backward B costs I + W
  double backward_weight_s = 0;  // W
  // Zero Bubble's accounting: F adds M_B; I frees M_B - M_W; W frees M_W;
  // a full B frees M_B.
  std::int64_t activation_bytes = 0;   // M_B
  std::int64_t weight_grad_bytes = 0;  // M_W
  std::int64_t logits_bytes = 0;       // of M_B: output-layer logits, reported apart
  // Payload of one point-to-point message across the boundary after this
  // stage: the activation it sends forward, and the input gradient the next
  // stage sends back (the last stage's is unused).
  std::int64_t send_bytes = 0;
  // Of forward_s and backward_input_s: communication inside the pass (a
  // mixture of experts' token dispatch and combine) that an overlapped pair
  // runs beside its other pass's compute.
  double forward_comm_s = 0;
  double backward_input_comm_s = 0;
  // Of forward_s and backward_input_s: how long the pass's collectives
  // hold the GPU's network port (groups beyond the NVLink domain). The
  // stage's stage-to-stage messages that cross the network share the port
  // with them (sim/port_sharing.h).
  double forward_network_s = 0;
  double backward_input_network_s = 0;
  // The network time of one of the stage's stage-to-stage messages where
  // they share the GPU's network port with that communication (0: they do
  // not): an overlapped pair's port carries both passes' communication and
  // a message of each.
  double network_message_s = 0;
  // Of backward_input_s: the recomputed forward (activation checkpointing),
  // and the activations it brings back for the backward (0: nothing is
  // recomputed).
  double recompute_s = 0;
  std::int64_t recompute_bytes = 0;
  // Set where the schedule runs the recomputation as RECOMPUTE actions of
  // their own (sim/recompute_actions.h): backward_input_s then leaves out
  // recompute_s, a RECOMPUTE takes recompute_bytes when it starts and the
  // backward (I or B) frees them when it ends.
  bool recompute_apart = false;
};

struct PipelineCosts {
  std::vector<StageCost> stages;           // indexed by stage
  std::vector<std::int64_t> static_bytes;  // per rank: weights, optimizer, buffers
  // Compute time lost per second of communication hidden beside it (the SMs
  // the communication kernels hold), in [0, 1).
  double hidden_comm_slowdown = 0;
};

// Costs as users give them: per rank, per micro-batch, for all the layers
// the rank holds. Each list has one value (every rank) or one per rank.
struct RankCosts {
  std::vector<double> forward_s{0.0};
  std::vector<double> backward_input_s{0.0};
  std::vector<double> backward_weight_s{0.0};
  std::vector<std::int64_t> activation_bytes{0};
  std::vector<std::int64_t> weight_grad_bytes{0};
  std::vector<std::int64_t> static_bytes{0};
  std::vector<std::int64_t> send_bytes{0};
  // Of backward_input_s: the recomputed forward, and the bytes it brings back.
  std::vector<double> recompute_s{0.0};
  std::vector<std::int64_t> recompute_bytes{0};
};

// Spreads per-rank costs over the schedule's stages: times and activation
// bytes split evenly over a rank's chunks; message sizes do not split (a
// boundary carries the whole activation). Everything scales by the
// schedule's microbatch_scale. Throws InputError for a list whose length
// is neither 1 nor the number of ranks, M_W > M_B, or a recomputation
// longer than the backward it is part of.
PipelineCosts expand_rank_costs(const RankCosts& costs, const Schedule& schedule);

double action_duration_s(const StageCost& cost, OpKind kind);
// Of action_duration_s: the communication a paired pass can hide.
double action_comm_s(const StageCost& cost, OpKind kind);

// An overlapped pair (DualPipe's F&B: `first` and `second` on one rank)
// runs each pass's communication beside the other's compute: each action
// takes its duration less what of its communication the other's compute
// hides, at the slowdown's cost (never less than its own compute), and the
// pair no less than its network port needs (StageCost::network_message_s).
struct PairSaving {
  double first_s = 0;  // time saved
  double second_s = 0;
  double first_hidden_s = 0;  // communication hidden (the saving before the slowdown)
  double second_hidden_s = 0;
};
PairSaving pair_saving(const PipelineCosts& costs, const Action& first, const Action& second);
// The action at `step` of a rank's list: what its overlapped pair saves it
// (0 outside a pair).
double paired_saving_s(const PipelineCosts& costs, const std::vector<Action>& actions, std::size_t step);
// Of its communication, what the pair hid.
double paired_hidden_s(const PipelineCosts& costs, const std::vector<Action>& actions, std::size_t step);

}  // namespace pipeplan::sim
