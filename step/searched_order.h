// A searched schedule's order for stage costs: the limit each rank's
// activations keep to (--activation-limit, else what a memory cap leaves
// beside each rank's static bytes, else p x M_B), the search, and a line
// saying what was searched within what.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/costs.h"
#include "sim/schedule.h"
#include "sim/search/activation_limit.h"
#include "sim/topology.h"

namespace pipeplan::step {

struct SearchedOrder {
  sim::Schedule schedule;
  std::string note;  // "ZBAuto: the fastest of 8 orders within 2p x M_B per rank (--activation-limit)"
};

// `costs` are laid out on sim::searched_schedule_shape. `memory_cap` is
// each rank's whole memory (0: none), named by `cap_source` ("--memory-cap",
// "the usable memory of h100-sxm"); with an activation limit too, each rank
// keeps to the tighter of the two. A cap alone that leaves some rank less
// than one micro-batch gives the order holding one on every rank (the
// note says so; its replay reports the rank over the cap).
// Whether `limit` changes nothing beside `memory_cap` (each rank's whole
// memory; 0: none): it leaves every rank at least what the cap does, or the
// cap leaves some rank less than one micro-batch (the cap's own order shows
// that).
bool limit_redundant(const sim::ActivationLimit& limit, std::int64_t memory_cap, const sim::PipelineCosts& costs);

// Throws InputError when a searched `family`'s order would run with its
// recomputation in the bubbles: the search does not count the recomputed
// activations, so the order would not keep to its limit.
void check_no_bubble_recompute(const std::string& family, bool recompute_in_bubbles);

// `limit_source` names where the activation limit came from.
// Throws InputError naming the limit when no order keeps to it.
SearchedOrder search_order(const std::string& family, const sim::PipelineCosts& costs,
                           const sim::Topology& topology, int microbatches,
                           const std::optional<sim::ActivationLimit>& activation_limit, std::int64_t memory_cap,
                           const std::string& cap_source, const std::string& limit_source = "--activation-limit");

}  // namespace pipeplan::step
