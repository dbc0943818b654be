// From work to seconds on a given GPU: matrix multiplications at a
// size-dependent fraction of peak, elementwise kernels at a fraction of
// memory bandwidth, and ring collectives on the node's or the network's
// links (nccl-tests' bus-bandwidth factors).
#pragma once

#include <cstddef>
#include <string_view>

#include "models/hardware.h"
#include "models/layers.h"

namespace pipeplan::models {

struct LayerTimes {
  double forward_s = 0;
  double backward_input_s = 0;
  double backward_weight_s = 0;
  // Of forward_s and backward_input_s: the mixture of experts' token
  // dispatch and combine, which a schedule that pairs passes (DualPipeV's
  // overlapped F&B) runs beside the other pass's compute.
  double forward_comm_s = 0;
  double backward_input_comm_s = 0;
  // Of backward_input_s: the recomputed forward (0 without recomputation).
  double recompute_s = 0;
  // How long each pass's collectives hold the GPU's network port (those
  // whose group leaves its NVLink domain, hidden or not; PassTerms::
  // network_port_s): the stage-to-stage messages share the port with them.
  double forward_network_s = 0;
  double backward_input_network_s = 0;
};

// One pass's time by kind of work: the terms pass_time_s adds up.
struct PassTerms {
  double gemm_s = 0;         // matrix multiplications
  double attention_s = 0;    // fused attention kernels
  double elementwise_s = 0;  // memory-bound kernels (norms, activations, softmax, ...)
  double tp_comm_s = 0;      // tensor-parallel collectives, the part not hidden behind GEMMs
  double cp_comm_s = 0;      // context parallelism's ring transfers, the part not hidden behind attention
  double shard_comm_s = 0;   // ZeRO-2/3's gathers and reduce-scatters, the part not hidden behind the pass
  double expert_comm_s = 0;  // MoE token dispatch and combine: all-to-alls over ep, gathers over etp
  // Not a term of the time: how long the collectives above whose groups
  // leave their NVLink domain hold the GPU's network port, the parts hidden
  // behind compute included.
  double network_port_s = 0;
  // Not terms either, but parts of two: of gemm_s, the routed experts'
  // grouped GEMMs; of elementwise_s, the routing (router softmax and top-k,
  // permute and unpermute).
  double expert_gemm_s = 0;
  double routing_s = 0;
  double total_s() const {
    return gemm_s + attention_s + elementwise_s + tp_comm_s + cp_comm_s + shard_comm_s + expert_comm_s;
  }
};
PassTerms pass_terms(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape);

// Time of one layer for one micro-batch on one tensor-parallel rank,
// tensor-parallel collectives included (on NVLink when t fits in a node).
LayerTimes layer_times(const LayerCost& layer, const HardwareConfig& hardware, const TrainingShape& shape);
double pass_time_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape);

// Seconds outside the kernels a layer adds to one micro-batch's forward and
// input-gradient passes (the hardware's runtime.layer_overhead, per
// transformer layer; the backward pays it twice under full recomputation,
// which runs the forward's kernels again). Chunks' pass_overhead apart.
// A mixture of experts' layer pays at least the host's time to
// issue the pass (moe_host_bound_s) instead: `times` are its kernels'.
struct LayerOverheads {
  double forward_s = 0;
  double backward_s = 0;
  // Of each: the pass waiting on the host beyond runtime.layer_overhead.
  double forward_host_s = 0;
  double backward_host_s = 0;
};
LayerOverheads layer_overheads(const LayerCost& layer, const LayerTimes& times, const HardwareConfig& hardware,
                               const TrainingShape& shape);

// The router's counts size the grouped GEMMs and the dispatch's splits on the
// host: each MoE layer's forward copies its token counts per expert to the
// host and waits for them (Megatron-core's token dispatchers: tolist() of
// the splits; DeepEP's dispatch returns the counts per expert as a host
// list). The host cannot run ahead of the GPU past that sync, so a pass of
// the layer takes at least the host's time to issue its kernels
// (runtime.moe_layer_host), however little GPU work it has: `kernels_s`
// more seconds of it are exposed. A recomputed router syncs again in the
// backward. A capacity factor syncs too: only padding every expert to its
// capacity (not modelled) would fix the sizes. 0 for a dense layer.
double moe_host_bound_s(const LayerCost& layer, const HardwareConfig& hardware, bool backward, double kernels_s);

// What `hidden_s` seconds of a collective beside compute cost that compute:
// its kernels hold gpu.collective_sms of the SMs for as long.
double contention_s(double hidden_s, const GpuSpec& gpu);

// Ring collectives among `ranks` peers over `link`, `bytes` the payload
// each rank holds (nccl-tests' convention): all-reduce moves 2(n-1)/n of
// it, all-gather and reduce-scatter (n-1)/n; each step pays the latency.
double all_reduce_s(double bytes, int ranks, const LinkSpec& link);
double all_gather_s(double bytes, int ranks, const LinkSpec& link);
double reduce_scatter_s(double bytes, int ranks, const LinkSpec& link);

// An all-to-all among `ranks` peers `stride` GPUs apart, `bytes` each rank's
// send buffer: (n-1)/n of it leaves the rank, to the peers in its node over
// NVLink and to the others over the network at the same time (the slower
// sets the time), in n - 1 steps that each pay the latency.
double all_to_all_s(double bytes, int ranks, int stride, const HardwareConfig& hardware);
// DeepEP's exchange of `call` (an all-to-all of tokens): a token crosses the
// network once to each other node holding one of its experts (of `copies`
// drawn among `experts` spread evenly over the nodes), and its copies reach
// their GPUs within the node over NVLink at the same time.
double deepep_s(const CollectiveWork& call, int ranks, int stride, const HardwareConfig& hardware);
// Of a token's `copies` experts drawn without repeats among `experts` spread
// evenly over `nodes` nodes: how many other nodes than its own it reaches,
// on average.
double remote_nodes_reached(int experts, double copies, int nodes);
// The same for a call's routing: with group-limited routing whose groups
// fall whole on nodes (groups a multiple of nodes), of the `group_top_k`
// groups drawn among `groups`; with groups spanning nodes, the expert-level
// count capped at the chosen groups' nodes.
double routed_remote_nodes(const CollectiveWork& call, int nodes);

// The link a group of GPUs talks over: node_link when it lies in one
// NVLink domain (or one node), else the network through the narrowest tier
// of switches that holds it. A group of `ranks` GPUs `stride` apart lies in
// a block of ranks x stride consecutive GPUs, blocks aligned at multiples of
// their size (Megatron's rank order); a group is charged at the tier of its
// widest block among the hardware's nodes (all of them when not given).
LinkSpec link_for_group(const HardwareConfig& hardware, int ranks, int stride);
LinkSpec link_for_span(const HardwareConfig& hardware, long long span_gpus);
// Whether every aligned block of `span_gpus` lies in one NVLink domain (or node).
bool on_node_link(const HardwareConfig& hardware, long long span_gpus);
// Refuses (InputError naming `option`) a tensor-parallel size whose groups
// leave their NVLink domain, unless `allowed` (--allow-cross-node-tp), and
// the flag where every group stays in its domain (it would change nothing).
void check_tp_domain(const HardwareConfig& hardware, int tp, std::string_view option, bool allowed);
// The narrowest of hardware.network_tiers holding every aligned block of
// `span_gpus` (its index; network_tiers.size(): none, or no tiers).
std::size_t holding_tier(const HardwareConfig& hardware, long long span_gpus);
// The network between GPUs whose nearest common switch is network_tiers
// [tier]: the NIC's rate divided by the most oversubscribed tier up to it,
// the latencies of the tiers up to it added to the network's.
LinkSpec network_tier_link(const HardwareConfig& hardware, std::size_t tier);

}  // namespace pipeplan::models
