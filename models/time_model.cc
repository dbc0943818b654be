#include "models/time_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <utility>

#include "common/error.h"
#include "models/gemm_time.h"

namespace pipeplan::models {
namespace {

constexpr const char* kPeakFigure = "gpu.peak_flops.bf16";

// Seconds to do `work` at `rate`. A zero rate with work to do means the
// hardware description lacks the figure; say which one rather than return inf.
double at_rate(double work, double rate, const char* figure) {
  if (work <= 0) return 0;
  if (rate <= 0) throw InputError(fmt::format("hardware: {} is zero; set it in the hardware file", figure));
  return work / rate;
}

// A ring over n ranks moves `factor` x bytes through each rank's link in
// `steps` steps, each paying the link latency, at the bus bandwidth NCCL
// reaches. No bytes: no collective.
double ring_s(double bytes, int ranks, const LinkSpec& link, double factor, int steps) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return at_rate(factor * bytes, link.collective_bandwidth(), "node.link_bandwidth or network.bandwidth") +
         steps * link.latency_s;
}

double gemm_s(const std::vector<GemmWork>& gemms, const GpuSpec& gpu) {
  double seconds = 0;
  for (const GemmWork& gemm : gemms) {
    if (gemm.count > 0) seconds += gemm.count * gemm_timing(gemm, gpu).seconds;
  }
  return seconds;
}

// FlashAttention computes only the key blocks a causal mask leaves: the
// lower triangle of the s x s square and the blocks on its diagonal (every
// model in the zoo is a causal decoder).
constexpr double kFlashBlock = 128;
// Its backward first recomputes the scores: five s x s products to the
// forward's two, where the FLOP count says four (FlashAttention's own count:
// backward 2.5x forward, benchmarks/benchmark_flash_attention.py).
constexpr double kFlashBackwardWork = 5.0 / 4.0;

// One fused-attention kernel executing `flops`.
double flash_kernel_s(double flops, const GpuSpec& gpu) {
  return at_rate(flops, gpu.peak_flops_bf16 * gpu.attention.at(flops), kPeakFigure);
}

// The attention of one ring step, a seq x seq block of queries and keys:
// the first (the rank's own keys) causal, each later one half dense (with
// the load-balanced chunks, either half the queries see all the keys or
// all the queries half of them).
double diagonal_step_s(const AttentionWork& core, const GpuSpec& gpu) {
  const double block = core.flops() / core.ring;
  const double causal = std::min(1.0, (core.seq + kFlashBlock) / (2 * core.seq));
  return flash_kernel_s(block * causal * (core.gradient ? kFlashBackwardWork : 1.0), gpu);
}
double off_diagonal_step_s(const AttentionWork& core, const GpuSpec& gpu) {
  const double block = core.flops() / core.ring;
  return flash_kernel_s(block / 2 * (core.gradient ? kFlashBackwardWork : 1.0), gpu);
}

// Without FlashAttention the core is batched GEMMs over the full square (the
// mask is applied, not skipped); the softmax is elementwise traffic. The
// gradient's four: dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q.
double unfused_attention_s(const AttentionWork& core, const GpuSpec& gpu) {
  const double s = core.seq;
  const double heads = core.heads;
  if (!core.gradient) {
    return gemm_s({{s, s, core.qk_dim, 1, heads}, {s, core.v_dim, s, 1, heads}}, gpu);
  }
  return gemm_s({{s, s, core.v_dim, 1, heads},
                 {s, core.v_dim, s, 1, heads},
                 {s, core.qk_dim, s, 1, heads},
                 {s, core.qk_dim, s, 1, heads}},
                gpu);
}

// A ring of c ranks runs c steps; while a step computes, the block the next
// one needs is on the CP group's link (P2P, one direction). What a step's
// compute cannot cover waits; what it covers slows it by the SMs the
// transfer holds.
// One step's block on the CP group's link (c ranks, t apart).
double ring_transfer_s(const AttentionWork& core, const HardwareConfig& hardware, const TrainingShape& shape) {
  const LinkSpec link = link_for_group(hardware, core.ring, shape.tp);
  return at_rate(core.exchange_bytes, link.bandwidth, "node.link_bandwidth or network.bandwidth") + link.latency_s;
}

struct RingSteps {
  double compute_s = 0;
  double exposed_s = 0;
  double hidden_s = 0;
};
RingSteps ring_attention(const AttentionWork& core, const HardwareConfig& hardware, const TrainingShape& shape) {
  RingSteps steps;
  const double diagonal = diagonal_step_s(core, hardware.gpu);
  if (core.ring <= 1) {
    steps.compute_s = diagonal;
    return steps;
  }
  const double later = off_diagonal_step_s(core, hardware.gpu);
  steps.compute_s = diagonal + (core.ring - 1) * later;
  const double transfer = ring_transfer_s(core, hardware, shape);
  // c - 1 transfers, beside steps 0 .. c - 2.
  steps.exposed_s = std::max(0.0, transfer - diagonal) + (core.ring - 2) * std::max(0.0, transfer - later);
  steps.hidden_s = (core.ring - 1) * transfer - steps.exposed_s;
  return steps;
}

// The attention cores' compute, and context parallelism's exposed ring
// transfers with the contention of the hidden ones.
std::pair<double, double> attention_s(const PassWork& pass, const HardwareConfig& hardware,
                                      const TrainingShape& shape) {
  double compute = 0, ring = 0;
  for (const AttentionWork& core : pass.attention) {
    if (core.heads <= 0 || core.seq <= 0) continue;
    if (!shape.flash_attention) {
      compute += unfused_attention_s(core, hardware.gpu);
      continue;
    }
    const RingSteps steps = ring_attention(core, hardware, shape);
    compute += steps.compute_s;
    ring += steps.exposed_s + contention_s(steps.hidden_s, hardware.gpu);
  }
  return {compute, ring};
}

// A ring collective; an all-to-all only among ranks of one link.
double collective_s(const CollectiveWork& call, int ranks, const LinkSpec& link) {
  switch (call.kind) {
    case CollectiveKind::kAllReduce: return all_reduce_s(call.bytes, ranks, link);
    case CollectiveKind::kAllGather: return all_gather_s(call.bytes, ranks, link);
    case CollectiveKind::kReduceScatter: return reduce_scatter_s(call.bytes, ranks, link);
    case CollectiveKind::kAllToAll: return ring_s(call.bytes, ranks, link, (ranks - 1.0) / ranks, ranks - 1);
  }
  return 0;
}

// The experts' collectives, none hidden within the pass: all-to-alls over
// the ep ranks (etp apart in Megatron's expert rank order), gathers and
// reduce-scatters over the etp neighbours.
double expert_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape) {
  double seconds = 0;
  const int etp = shape.expert_tp();
  for (const CollectiveWork& call : pass.expert_collectives) {
    double once = 0;
    if (call.kind != CollectiveKind::kAllToAll) {
      once = collective_s(call, etp, link_for_group(hardware, etp, 1));
    } else if (shape.routing.dispatcher == MoeDispatcher::kDeepEp) {
      once = deepep_s(call, shape.ep, etp, hardware);
    } else {
      once = all_to_all_s(call.bytes, shape.ep, etp, hardware);
    }
    seconds += call.count * once;
  }
  return seconds;
}

}  // namespace

double contention_s(double hidden_s, const GpuSpec& gpu) {
  return gpu.sms > 0 ? hidden_s * gpu.collective_sms / gpu.sms : 0;
}

namespace {

// Tensor-parallel collectives, each call on its own (so each pays its ring's
// latency), not overlapped with compute (Megatron's default). With
// --tp-comm-overlap each all-gather and reduce-scatter is cut into t chunks
// that run beside the chunks of its GEMM: the first chunk waits, the rest
// hide behind the pass's GEMMs as far as those last. All-reduces (without
// sequence parallelism, and the loss's) stay exposed.
double tensor_parallel_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape,
                         double gemm_s) {
  const int tp = shape.tp;
  if (tp <= 1) return 0;
  const LinkSpec link = link_for_group(hardware, tp, 1);
  double exposed = 0, overlappable = 0;
  for (const CollectiveWork& call : pass.collectives) {
    const double seconds = call.count * collective_s(call, tp, link);
    (shape.runtime.tp_comm_overlap && call.kind != CollectiveKind::kAllReduce ? overlappable : exposed) += seconds;
  }
  const double first_chunks = overlappable / tp;
  const double hidden = std::min(overlappable - first_chunks, gemm_s);
  return exposed + first_chunks + (overlappable - first_chunks - hidden) + contention_s(hidden, hardware.gpu);
}

// ZeRO-2/3's collectives over the d x c weight replicas (t apart in
// Megatron's default order, so on NVLink only when t x d x c fits in a node), each prefetched beside the
// compute of the layer before: what the pass's compute cannot cover waits,
// what it covers slows it by the SMs the collective holds.
double shard_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape, double compute_s) {
  const int replicas = shape.weight_replicas();
  if (pass.shard_collectives.empty() || replicas <= 1) return 0;
  const LinkSpec link = link_for_group(hardware, replicas, shape.replica_stride());
  double seconds = 0;
  for (const CollectiveWork& call : pass.shard_collectives) seconds += call.count * collective_s(call, replicas, link);
  const double hidden = std::min(seconds, compute_s);
  return seconds - hidden + contention_s(hidden, hardware.gpu);
}

// How long the pass's collectives hold the network port: each group (TP,
// CP's ring, ZeRO's replicas, the experts' all-to-all) whose GPUs leave
// their NVLink domain, for all its time, whatever compute hides it.
double network_port_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape) {
  double seconds = 0;
  const auto off_node = [&](int ranks, long long stride) { return ranks > 1 && !on_node_link(hardware, ranks * stride); };
  if (off_node(shape.tp, 1)) {
    const LinkSpec link = link_for_group(hardware, shape.tp, 1);
    for (const CollectiveWork& call : pass.collectives) seconds += call.count * collective_s(call, shape.tp, link);
  }
  for (const AttentionWork& core : pass.attention) {
    if (shape.flash_attention && core.heads > 0 && core.seq > 0 && off_node(core.ring, shape.tp)) {
      seconds += (core.ring - 1) * ring_transfer_s(core, hardware, shape);
    }
  }
  const int replicas = shape.weight_replicas();
  if (off_node(replicas, shape.replica_stride())) {
    const LinkSpec link = link_for_group(hardware, replicas, shape.replica_stride());
    for (const CollectiveWork& call : pass.shard_collectives) seconds += call.count * collective_s(call, replicas, link);
  }
  if (off_node(shape.ep, shape.expert_tp())) seconds += expert_s(pass, hardware, shape);
  return seconds;
}

}  // namespace

PassTerms pass_terms(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape) {
  const GpuSpec& gpu = hardware.gpu;
  PassTerms terms;
  terms.gemm_s = gemm_s(pass.gemms, gpu);
  std::tie(terms.attention_s, terms.cp_comm_s) = attention_s(pass, hardware, shape);
  terms.elementwise_s =
      at_rate(pass.memory_bytes, gpu.memory_bandwidth * gpu.memory.at(pass.memory_bytes), "gpu.memory_bandwidth");
  terms.tp_comm_s = tensor_parallel_s(pass, hardware, shape, terms.gemm_s);
  terms.shard_comm_s = shard_s(pass, hardware, shape, terms.gemm_s + terms.attention_s + terms.elementwise_s);
  terms.expert_comm_s = expert_s(pass, hardware, shape);
  terms.network_port_s = network_port_s(pass, hardware, shape);
  for (const GemmWork& gemm : pass.gemms) {
    if (gemm.routed && gemm.count > 0) terms.expert_gemm_s += gemm.count * gemm_timing(gemm, gpu).seconds;
  }
  // At the pass's elementwise rate, a share of its bytes.
  if (pass.memory_bytes > 0) terms.routing_s = terms.elementwise_s * pass.routing_bytes / pass.memory_bytes;
  return terms;
}

double pass_time_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape) {
  return pass_terms(pass, hardware, shape).total_s();
}

namespace {

// Transformer blocks a layer runs: one, or the output layer's multi-token
// prediction blocks.
double blocks_in(const LayerCost& layer) {
  if (layer.kind == LayerKind::kTransformer) return 1;
  return layer.kind == LayerKind::kLoss ? layer.mtp_blocks : 0;
}

}  // namespace

double moe_host_bound_s(const LayerCost& layer, const HardwareConfig& hardware, bool backward, double kernels_s) {
  if (layer.forward.routing_bytes <= 0) return 0;
  const double issues = backward && layer.recompute.routing_bytes > 0 ? 2 : 1;
  return issues * blocks_in(layer) * hardware.moe_layer_host_s - kernels_s;
}

LayerOverheads layer_overheads(const LayerCost& layer, const LayerTimes& times, const HardwareConfig& hardware,
                               const TrainingShape& shape) {
  const double blocks = blocks_in(layer);
  if (blocks == 0) return {};
  const double forwards_in_backward = shape.recompute == Recompute::kFull ? 2 : 1;
  const double forward_host = moe_host_bound_s(layer, hardware, false, times.forward_s);
  const double backward_host = moe_host_bound_s(layer, hardware, true, times.backward_input_s + times.backward_weight_s);
  const double forward_fixed = hardware.layer_overhead_s * blocks;
  const double backward_fixed = hardware.layer_overhead_s * blocks * forwards_in_backward;
  return {std::max(forward_fixed, forward_host), std::max(backward_fixed, backward_host),
          std::max(0.0, forward_host - forward_fixed), std::max(0.0, backward_host - backward_fixed)};
}

LayerTimes layer_times(const LayerCost& layer, const HardwareConfig& hardware, const TrainingShape& shape) {
  const PassTerms forward = pass_terms(layer.forward, hardware, shape);
  const PassTerms backward_input = pass_terms(layer.backward_input, hardware, shape);
  const double recompute = layer.recompute_flops > 0 || layer.recompute.memory_bytes > 0
                               ? std::min(pass_time_s(layer.recompute, hardware, shape), backward_input.total_s())
                               : 0.0;
  // The recomputed forward in the backward runs its collectives again.
  const double recompute_network = recompute > 0 ? pass_terms(layer.recompute, hardware, shape).network_port_s : 0;
  return {forward.total_s(),
          backward_input.total_s(),
          pass_time_s(layer.backward_weight, hardware, shape),
          forward.expert_comm_s,
          backward_input.expert_comm_s,
          recompute,
          forward.network_port_s,
          backward_input.network_port_s + recompute_network};
}

// nccl-tests' bus-bandwidth factors: all-reduce 2(n-1)/n in 2(n-1) steps
// (reduce-scatter then all-gather), all-gather and reduce-scatter (n-1)/n
// in n-1 steps.
double all_reduce_s(double bytes, int ranks, const LinkSpec& link) {
  const double n = ranks;
  return ring_s(bytes, ranks, link, 2 * (n - 1) / n, 2 * (ranks - 1));
}

double all_gather_s(double bytes, int ranks, const LinkSpec& link) {
  const double n = ranks;
  return ring_s(bytes, ranks, link, (n - 1) / n, ranks - 1);
}

double reduce_scatter_s(double bytes, int ranks, const LinkSpec& link) {
  const double n = ranks;
  return ring_s(bytes, ranks, link, (n - 1) / n, ranks - 1);
}

double all_to_all_s(double bytes, int ranks, int stride, const HardwareConfig& hardware) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double n = ranks;
  const double in_node = std::clamp(hardware.local_gpus() / std::max(stride, 1), 1, ranks);
  const char* figure = "node.link_bandwidth or network.bandwidth";
  const double intra = at_rate(bytes * (in_node - 1) / n, hardware.node_link.collective_bandwidth(), figure);
  if (in_node >= n) return intra + (n - 1) * hardware.node_link.latency_s;
  const LinkSpec network = link_for_group(hardware, ranks, stride);
  const double inter = at_rate(bytes * (n - in_node) / n, network.collective_bandwidth(), figure);
  return std::max(intra, inter) + (n - 1) * network.latency_s;
}

double remote_nodes_reached(int experts, double copies, int nodes) {
  if (nodes <= 1 || experts <= 0) return 0;
  // A node is missed when every copy falls among the other nodes' experts.
  const double elsewhere = experts - static_cast<double>(experts) / nodes;
  double missed = 1;
  for (int i = 0; i < static_cast<int>(copies); ++i) missed *= std::max(0.0, (elsewhere - i) / (experts - i));
  return (nodes - 1) * (1 - missed);
}

double routed_remote_nodes(const CollectiveWork& call, int nodes) {
  const double free = remote_nodes_reached(call.experts, call.copies, nodes);
  if (call.groups <= 0 || call.group_top_k <= 0 || nodes <= 1) return free;
  // Every chosen group gets some of the token's copies (top_k >= the
  // groups chosen, as DeepSeek-V3's 8 of 4 groups): a node is reached when
  // one of its groups is chosen.
  if (call.groups % nodes == 0) return std::min(free, remote_nodes_reached(call.groups, call.group_top_k, nodes));
  return std::min(free, static_cast<double>(call.group_top_k) * nodes / call.groups);
}

double deepep_s(const CollectiveWork& call, int ranks, int stride, const HardwareConfig& hardware) {
  if (ranks <= 1 || call.bytes <= 0) return 0;
  const double in_node = std::clamp(hardware.local_gpus() / std::max(stride, 1), 1, ranks);
  const int nodes = static_cast<int>(std::ceil(ranks / in_node));
  if (nodes <= 1 || call.copies <= 0) return all_to_all_s(call.bytes, ranks, stride, hardware);
  const char* figure = "node.link_bandwidth or network.bandwidth";
  const double per_copy = call.bytes / call.copies;
  const LinkSpec network = link_for_group(hardware, ranks, stride);
  const double inter = at_rate(per_copy * routed_remote_nodes(call, nodes), network.collective_bandwidth(), figure);
  // Each copy lands on its expert's GPU, off the receiving one unless it is that GPU.
  const double intra = at_rate(call.bytes * (in_node - 1) / in_node, hardware.node_link.collective_bandwidth(), figure);
  return std::max(inter, intra) + (nodes - 1) * network.latency_s +
         (in_node - 1) * hardware.node_link.latency_s;
}

namespace {

// Whether every block of `span` consecutive GPUs, aligned at a multiple of
// span, lies in one block of `domain` GPUs, of the blocks within the first
// `total` GPUs (0: any number). The pattern repeats every lcm(span, domain)
// GPUs, domain / gcd blocks.
bool blocks_fit(long long span, long long domain, long long total) {
  if (span <= 1) return true;
  if (span > domain) return false;
  if (domain % span == 0) return true;
  const long long period = domain / std::gcd(span, domain);
  const long long blocks = total > 0 ? std::min(total / span, period) : period;
  for (long long k = 0; k < blocks; ++k) {
    if (k * span / domain != ((k + 1) * span - 1) / domain) return false;
  }
  return true;
}

// The GPUs the hardware counts (0: as many as asked for).
long long counted_gpus(const HardwareConfig& hardware) {
  return hardware.nodes > 0 ? static_cast<long long>(hardware.nodes) * hardware.gpus_per_node : 0;
}

}  // namespace

LinkSpec network_tier_link(const HardwareConfig& hardware, std::size_t tier) {
  LinkSpec link = hardware.network;
  double oversubscription = 1;
  for (std::size_t i = 0; i < hardware.network_tiers.size() && i <= tier; ++i) {
    oversubscription = std::max(oversubscription, hardware.network_tiers[i].oversubscription);
    link.latency_s += hardware.network_tiers[i].latency_s;
  }
  link.bandwidth /= oversubscription;
  link.bus_bandwidth /= oversubscription;
  return link;
}

std::size_t holding_tier(const HardwareConfig& hardware, long long span) {
  const long long total = counted_gpus(hardware);
  for (std::size_t i = 0; i < hardware.network_tiers.size(); ++i) {
    const int nodes = hardware.network_tiers[i].nodes;
    if (nodes == 0 || blocks_fit(span, static_cast<long long>(nodes) * hardware.gpus_per_node, total)) return i;
  }
  return hardware.network_tiers.size();
}

bool on_node_link(const HardwareConfig& hardware, long long span) {
  return blocks_fit(span, hardware.local_gpus(), counted_gpus(hardware));
}

void check_tp_domain(const HardwareConfig& hardware, int tp, std::string_view option, bool allowed) {
  const int local = hardware.local_gpus();
  if (allowed && on_node_link(hardware, tp)) {
    throw InputError(fmt::format("--allow-cross-node-tp: {} {} keeps every tensor-parallel group in one node or "
                                 "NVLink domain of {} GPUs on {}, so it changes nothing; drop it",
                                 option, tp, local, hardware.name));
  }
  if (allowed || on_node_link(hardware, tp)) return;
  throw InputError(fmt::format("{} {}: tensor-parallel groups of {} GPUs do not each lie in one node or NVLink "
                               "domain of {} GPUs on {} (their collectives would cross the network); use a divisor "
                               "of {}, or add --allow-cross-node-tp",
                               option, tp, tp, local, hardware.name, local));
}

LinkSpec link_for_span(const HardwareConfig& hardware, long long span) {
  if (on_node_link(hardware, span)) return hardware.node_link;
  return network_tier_link(hardware, holding_tier(hardware, span));
}

LinkSpec link_for_group(const HardwareConfig& hardware, int ranks, int stride) {
  // The group lies in a block of ranks x stride consecutive GPUs (its axis
  // right above the faster ones in Megatron's rank order).
  return link_for_span(hardware, static_cast<long long>(ranks) * stride);
}

}  // namespace pipeplan::models
