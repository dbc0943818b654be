#include "sim/search/activation_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/error.h"
#include "common/units.h"

namespace pipeplan::sim {

std::int64_t ActivationLimit::bytes(int ranks, std::int64_t activation_bytes) const {
  double limit = value;
  if (unit == Unit::kMicrobatches) limit = value * static_cast<double>(activation_bytes);
  if (unit == Unit::kPipelineDepths) limit = value * ranks * static_cast<double>(activation_bytes);
  return static_cast<std::int64_t>(std::min(std::floor(limit), static_cast<double>(kMaxBytes)));
}

std::string ActivationLimit::describe() const {
  switch (unit) {
    case Unit::kBytes: return format_bytes(value);
    case Unit::kMicrobatches: return fmt::format("{:.12g} x M_B", value);
    default: return value == 1 ? "p x M_B" : fmt::format("{:.12g}p x M_B", value);
  }
}

std::string ActivationLimit::spelled() const {
  switch (unit) {
    case Unit::kBytes: return fmt::format("{:.0f}B", value);
    case Unit::kMicrobatches: return fmt::format("{:.17g}", value);
    default: return fmt::format("{:.17g}p", value);
  }
}

namespace {

template <typename Hint>
ActivationLimit checked(const ActivationLimit& limit, const Hint& hint) {
  if (!(limit.value > 0) || !std::isfinite(limit.value) || limit.value > static_cast<double>(kMaxBytes)) {
    throw InputError(hint());
  }
  return limit;
}

}  // namespace

ActivationLimit parse_activation_limit(std::string_view text, std::string_view option) {
  const auto hint = [&] {
    return fmt::format("{} must be bytes (12GiB), micro-batches of activations (16) or a multiple of the pipeline "
                       "depth (2p), above 0; got '{}'",
                       option, text);
  };
  if (text.empty()) throw InputError(hint());
  ActivationLimit limit;
  if (text.back() == 'p' || text.back() == 'P') {
    limit.unit = ActivationLimit::Unit::kPipelineDepths;
    const std::string_view count = text.substr(0, text.size() - 1);
    try {
      limit.value = count.empty() ? 1.0 : parse_non_negative(count, option);
    } catch (const InputError&) {
      throw InputError(hint());
    }
    return checked(limit, hint);
  }
  // A plain number (2e1 too) counts micro-batches; bytes carry a unit.
  std::optional<double> count;
  try {
    count = parse_non_negative(text, option);
  } catch (const InputError&) {
    count.reset();
  }
  if (count) return checked({ActivationLimit::Unit::kMicrobatches, *count}, hint);
  try {
    limit.unit = ActivationLimit::Unit::kBytes;
    limit.value = static_cast<double>(parse_bytes(text, option));
  } catch (const InputError&) {
    throw InputError(hint());
  }
  return checked(limit, hint);
}

}  // namespace pipeplan::sim
