#include "models/deepep_buffers.h"

#include <algorithm>

namespace pipeplan::models {
namespace {

constexpr std::int64_t kNvlPeers = 8;     // NUM_MAX_NVL_PEERS: GPUs one NVLink buffer reaches
constexpr std::int64_t kMaxTopK = 128;    // the size hints' bound on top-k
constexpr std::int64_t kMaxScales = 128;  // and on FP8 scales per token
constexpr std::int64_t kSourceMeta = 8;   // internode::SourceMeta: two ints
constexpr std::int64_t kRdmaRecvTokens = 128;

// Tokens each channel receives per NVLink peer before it drains: the
// recommended configs' num_max_nvl_chunked_recv_tokens by group size
// (the same for dispatch and combine).
std::int64_t nvl_recv_tokens(int ranks) {
  if (ranks <= 8) return 256;
  if (ranks <= 64) return 288;
  if (ranks <= 96) return 480;
  if (ranks <= 128) return 560;
  return 720;
}

std::int64_t aligned(std::int64_t bytes) { return (bytes + 127) / 128 * 128; }

// Per received token: its hidden state, its source, top-k indices (int64)
// and weights (float), and FP8 scales (float).
std::int64_t token_bytes(std::int64_t hidden_bytes) {
  return hidden_bytes + kSourceMeta + kMaxTopK * 8 + kMaxTopK * 4 + kMaxScales * 4;
}

}  // namespace

std::int64_t deepep_buffer_bytes(std::int64_t hidden_bytes, int ranks, int sms) {
  if (ranks <= 1) return 0;
  const std::int64_t channels = sms / 2;
  const std::int64_t rdma_ranks = std::max<std::int64_t>(ranks / kNvlPeers, 1);
  const std::int64_t nvl_ranks = std::min<std::int64_t>(ranks, kNvlPeers);
  const std::int64_t nvl = aligned(channels * nvl_ranks * (2 * rdma_ranks + 3) * 4 +
                                   channels * nvl_ranks * nvl_recv_tokens(ranks) * token_bytes(hidden_bytes));
  if (ranks <= kNvlPeers) return nvl;
  // Send and receive halves per RDMA peer; the 16-byte int4 per token; and
  // the 1 MiB DeepEP adds "to be safe".
  const std::int64_t rdma =
      aligned(channels * rdma_ranks * (kNvlPeers * 2 + 2) * 2 * 4 +
              channels * rdma_ranks * kRdmaRecvTokens * (token_bytes(hidden_bytes) + 16) * 2 + (1 << 20));
  return nvl + rdma;
}

}  // namespace pipeplan::models
