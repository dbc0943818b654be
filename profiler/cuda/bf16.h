// bfloat16 on the host: the top 16 bits of an IEEE fp32. Rounding is to
// nearest, ties to even (what __float2bfloat16 does on the device), so
// weights converted here equal weights converted there.
#pragma once

#include <bit>
#include <cstdint>

namespace pipeplan::profiler {

inline std::uint16_t bf16_from_float(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

inline float float_from_bf16(std::uint16_t value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

// The nearest bf16 value, as a float.
inline float round_to_bf16(float value) { return float_from_bf16(bf16_from_float(value)); }

}  // namespace pipeplan::profiler
