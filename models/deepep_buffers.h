// The buffers DeepEP's normal (high-throughput) kernels hold for the
// dispatch and combine of an expert-parallel group: allocated once per
// process when the first MoE layer runs, outside PyTorch's allocator
// (cudaMalloc for the NVLink buffer, NVSHMEM for the RDMA one), and held
// for the whole run.
#pragma once

#include <cstdint>

namespace pipeplan::models {

// Bytes of both buffers for a group of `ranks` GPUs (ep x etp) moving
// tokens of `hidden_bytes` (hidden x max(element size, 2)), with `sms`
// streaming multiprocessors given to DeepEP (Megatron's
// moe_deepep_num_sms, 20 by default). Megatron-core (fused_a2a.py
// get_buffer) takes the larger of the dispatch and combine configs' size
// hints; DeepEP (csrc/config.hpp get_nvl_buffer_size_hint and
// get_rdma_buffer_size_hint, deep_ep/buffer.py get_dispatch_config) sizes
// them per channel (sms / 2), per peer and per chunk of received tokens.
std::int64_t deepep_buffer_bytes(std::int64_t hidden_bytes, int ranks, int sms = 20);

}  // namespace pipeplan::models
