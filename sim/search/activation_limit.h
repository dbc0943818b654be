// How much activation memory a searched schedule may hold on a rank at
// once: bytes ("12GiB"), a number of micro-batches' activations ("16":
// 16 x M_B) or a multiple of the pipeline depth ("2p": 2p x M_B, Zero
// Bubble's ZB-2p; "p" is what 1F1B holds on its first rank).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pipeplan::sim {

struct ActivationLimit {
  enum class Unit { kBytes, kMicrobatches, kPipelineDepths };
  Unit unit = Unit::kPipelineDepths;
  double value = 1;  // bytes, micro-batches or multiples of p
  friend bool operator==(const ActivationLimit&, const ActivationLimit&) = default;

  // The bytes a rank of a `ranks`-deep pipeline may hold, whose micro-batch
  // keeps `activation_bytes` (M_B) until its backward.
  std::int64_t bytes(int ranks, std::int64_t activation_bytes) const;
  // "2p x M_B", "16 x M_B", "12.00 GiB".
  std::string describe() const;
  // As parse_activation_limit reads it back: "2p", "16", "12884901888B".
  std::string spelled() const;
};

// Throws InputError naming `option` for anything but a positive finite
// value in one of the three forms.
ActivationLimit parse_activation_limit(std::string_view text, std::string_view option);

}  // namespace pipeplan::sim
