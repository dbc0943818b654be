#include "sim/action.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <utility>

#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::sim {
namespace {

// Longest names first so that "SEND_F" is not read as a bad "S...".
constexpr std::array<std::pair<std::string_view, OpKind>, 9> kKindNames{{
    {"SEND_F", OpKind::kSendForward},
    {"RECV_F", OpKind::kRecvForward},
    {"SEND_B", OpKind::kSendBackward},
    {"RECV_B", OpKind::kRecvBackward},
    {"BW", OpKind::kBackward},  // PyTorch <= 2.5 spelled a full backward "BW"
    {"F", OpKind::kForward},
    {"B", OpKind::kBackward},
    {"I", OpKind::kBackwardInput},
    {"W", OpKind::kBackwardWeight},
}};

constexpr std::string_view kFormatHint = "write it as stage, kind, micro-batch, e.g. 2F0 or 1SEND_B3";

// Reads leading decimal digits; returns the count consumed (0 if none).
std::size_t read_index(std::string_view whole, std::string_view text, std::int32_t& value) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc()) {
    throw InputError(fmt::format("action {}: index {} is too large", quoted_input(whole), text.substr(0, digits)));
  }
  return static_cast<std::size_t>(ptr - text.data());
}

}  // namespace

std::string_view kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return "F";
    case OpKind::kBackward: return "B";
    case OpKind::kBackwardInput: return "I";
    case OpKind::kBackwardWeight: return "W";
    case OpKind::kRecompute: return "RECOMPUTE";
    case OpKind::kSendForward: return "SEND_F";
    case OpKind::kRecvForward: return "RECV_F";
    case OpKind::kSendBackward: return "SEND_B";
    case OpKind::kRecvBackward: return "RECV_B";
    case OpKind::kOffload: return "OFFLOAD";
    case OpKind::kReload: return "RELOAD";
  }
  return "?";
}

std::string to_string(const Action& action) {
  return fmt::format("{}{}{}", action.stage, kind_name(action.kind), action.microbatch);
}

Action parse_action(std::string_view text) {
  Action action;
  const std::size_t stage_digits = read_index(text, text, action.stage);
  if (stage_digits == 0) {
    throw InputError(fmt::format("action {} does not start with a stage number; {}", quoted_input(text), kFormatHint));
  }
  std::string_view rest = text.substr(stage_digits);
  for (const auto& [name, kind] : kKindNames) {
    if (!rest.starts_with(name)) continue;
    const std::string_view tail = rest.substr(name.size());
    const std::size_t mb_digits = read_index(text, tail, action.microbatch);
    if (mb_digits == 0 || mb_digits != tail.size()) break;
    action.kind = kind;
    return action;
  }
  throw InputError(fmt::format("unknown action {}; {}", quoted_input(text), kFormatHint));
}

}  // namespace pipeplan::sim
