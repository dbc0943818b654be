// DeepEP's buffers by hand (deepseek-ai/DeepEP csrc/config.hpp size hints,
// deep_ep/buffer.py recommended configs; Megatron-core's 20 SMs: 10
// channels). A DeepSeek-V3 token: 7168 x 2 bytes of hidden state plus 8 of
// source, 128 x (8 + 4) of top-k indices and weights and 128 x 4 of scales:
// 16,392 bytes.
#include "models/deepep_buffers.h"

#include <gtest/gtest.h>

namespace pipeplan::models {
namespace {

constexpr std::int64_t kHidden = 7168 * 2;

TEST(DeepEpBuffers, OneNodeHoldsTheNvLinkBufferAlone) {
  // 8 ranks: 10 channels x 8 peers x ((2 + 3) ints + 256 tokens of 16,392).
  const std::int64_t nvl = 10 * 8 * 5 * 4 + 10 * 8 * 256 * 16392;
  EXPECT_EQ(deepep_buffer_bytes(kHidden, 8), (nvl + 127) / 128 * 128);
}

TEST(DeepEpBuffers, EightNodesAddTheRdmaBuffer) {
  // 64 ranks: 8 NVLink peers by 8 RDMA peers, 288 NVLink tokens; RDMA send
  // and receive halves of 128 tokens (each 16 bytes more) and DeepEP's 1 MiB.
  const std::int64_t nvl = 10 * 8 * (2 * 8 + 3) * 4 + 10 * 8 * 288 * 16392;
  const std::int64_t rdma = 10 * 8 * 18 * 2 * 4 + 10 * 8 * 128 * 16408 * 2 + (1 << 20);
  EXPECT_EQ(deepep_buffer_bytes(kHidden, 64), (nvl + 127) / 128 * 128 + (rdma + 127) / 128 * 128);
  EXPECT_NEAR(static_cast<double>(deepep_buffer_bytes(kHidden, 64)) / (1 << 20), 681.7, 0.1);
}

TEST(DeepEpBuffers, NoneWithoutAGroup) { EXPECT_EQ(deepep_buffer_bytes(kHidden, 1), 0); }

}  // namespace
}  // namespace pipeplan::models
