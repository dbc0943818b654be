// The point-to-point links of a lowered schedule: one per stage boundary
// that crosses ranks and direction (activations forward, gradients
// backward), each with one sending and one receiving rank. NCCL pairs the
// sends and receives of a communicator by their order alone (no tags), so
// the GPU backend gives each link its own communicator and runs a schedule
// only when, on every link, the sender's SENDs come in the order of the
// receiver's RECVs. Pure schedule logic, with or without CUDA.
#pragma once

#include <string>
#include <vector>

#include "sim/schedule.h"

namespace pipeplan::validate {

struct P2pLink {
  int receiving_stage = 0;
  int direction = 0;  // kForwardTensor or kBackwardTensor (stage_runner.h)
  int from_rank = 0;
  int to_rank = 0;
  std::vector<int> sent;      // micro-batches, in the sender's order
  std::vector<int> received;  // micro-batches, in the receiver's order
  int round = 0;              // of setting links up: no rank is in two links of one round
};

// Every link of `lowered`, in the one order all ranks set them up in: by
// round, then gradients after activations, then by receiving stage. A
// round's links join disjoint pairs of ranks and proceed side by side, so
// a rank waits for at most a round per link it holds, not for a chain of
// links across the whole pipeline.
std::vector<P2pLink> p2p_links(const sim::Schedule& lowered);

// "stage 1 -> stage 2 (activations)"
std::string link_name(const P2pLink& link);

// Throws InputError naming the first link whose SENDs and RECVs differ in
// order or number.
void check_p2p_order(const sim::Schedule& lowered);

}  // namespace pipeplan::validate
