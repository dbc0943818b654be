#include "models/time_model.h"

#include <fmt/format.h>

#include "common/error.h"

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
// `steps` steps, each paying the link latency. No bytes: no collective.
double ring_s(double bytes, int ranks, const LinkSpec& link, double factor, int steps) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return at_rate(factor * bytes, link.bandwidth, "node.link_bandwidth or network.bandwidth") +
         steps * link.latency_s;
}

double gemm_s(const PassWork& pass, const GpuSpec& gpu) {
  double seconds = 0;
  for (const GemmWork& gemm : pass.gemms) {
    if (gemm.count <= 0) continue;
    seconds += gemm.count * at_rate(gemm.flops, gpu.peak_flops_bf16 * gpu.matmul.at(gemm.flops), kPeakFigure);
  }
  return seconds;
}

// Tensor-parallel collectives, not overlapped with compute (Megatron's
// default). PassWork gives each kind's payloads summed over the pass, not
// how many collectives make them up, so each sum is charged as one ring:
// the bandwidth term is exact, the latency is paid once per ring step
// rather than once per collective (a few tens of microseconds low per layer
// pass at t = 8 on NVLink). With sequence parallelism each all-reduce
// becomes an all-gather + reduce-scatter pair of the same payload
// (Korthikanti et al. 2022), and tp_gather_scatter_bytes counts each pair's
// payload once: a pair moves what an all-reduce of it moves.
double tensor_parallel_s(const PassWork& pass, const HardwareConfig& hardware, int tp) {
  if (tp <= 1) return 0;
  const LinkSpec& link = link_for_group(hardware, tp, 1);
  const double pairs = pass.tp_gather_scatter_bytes;
  return all_reduce_s(pass.tp_all_reduce_bytes, tp, link) + all_gather_s(pairs, tp, link) +
         reduce_scatter_s(pairs, tp, link);
}

}  // namespace

PassTerms pass_terms(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape) {
  const GpuSpec& gpu = hardware.gpu;
  PassTerms terms;
  terms.gemm_s = gemm_s(pass, gpu);
  terms.attention_s = at_rate(pass.attention_flops, gpu.peak_flops_bf16 * gpu.attention.at(pass.attention_flops),
                              kPeakFigure);
  terms.elementwise_s =
      at_rate(pass.memory_bytes, gpu.memory_bandwidth * gpu.memory.at(pass.memory_bytes), "gpu.memory_bandwidth");
  terms.tp_comm_s = tensor_parallel_s(pass, hardware, shape.tp);
  return terms;
}

double pass_time_s(const PassWork& pass, const HardwareConfig& hardware, const TrainingShape& shape) {
  return pass_terms(pass, hardware, shape).total_s();
}

LayerTimes layer_times(const LayerCost& layer, const HardwareConfig& hardware, const TrainingShape& shape) {
  return {pass_time_s(layer.forward, hardware, shape), pass_time_s(layer.backward_input, hardware, shape),
          pass_time_s(layer.backward_weight, hardware, shape)};
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

const LinkSpec& link_for_group(const HardwareConfig& hardware, int ranks, int stride) {
  // The group spans ranks * stride consecutive GPUs; node-aligned placement
  // (Megatron's rank order) puts them in one node when that fits.
  const long long span = static_cast<long long>(ranks) * stride;
  return span <= hardware.gpus_per_node ? hardware.node_link : hardware.network;
}

}  // namespace pipeplan::models
