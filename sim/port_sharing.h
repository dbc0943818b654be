// A GPU's network port carries both its pipeline's stage-to-stage messages
// and the collectives of groups that leave its NVLink domain (tensor,
// context or expert parallelism, ZeRO's shards across nodes). Where both
// meet they share the port.
#pragma once

#include <optional>

#include "sim/costs.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace pipeplan::sim {

// The boundary between `stage` and `stage + 1`: its message's time on the
// network (bytes over the link's rate, no latency), or 0 on one node.
double boundary_network_s(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology, int stage);

// The costs with the sharing in their pass times, their network fields
// cleared; nullopt where no pass shares a port with a message. In steady
// state each pass has a message on the port each way (the one its rank
// just sent or is about to receive); its collectives hold the port
// StageCost::forward_network_s of its forward_s seconds, spread through
// the pass. Sharing the port evenly where they meet delays both by the
// time they overlap: the message's network time x that share, at most the
// collectives' own time. A pass is delayed by the larger direction's.
std::optional<PipelineCosts> port_shared_costs(const Schedule& schedule, const PipelineCosts& costs,
                                               const Topology& topology);

}  // namespace pipeplan::sim
