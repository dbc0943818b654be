// The unit of a schedule: one stage doing one kind of work on one
// micro-batch. Text form follows PyTorch's pipelining IR: "2F0" is stage 2,
// forward, micro-batch 0; "1SEND_B3" is stage 1 sending micro-batch 3's
// input gradient to stage 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pipeplan::sim {

enum class OpKind : std::uint8_t {
  kForward,         // F
  kBackward,        // B: full backward (input and weight gradients together)
  kBackwardInput,   // I: input-gradient backward only (Zero Bubble's B)
  kBackwardWeight,  // W: weight-gradient backward only
  // The forward recomputed ahead of its backward (activation checkpointing
  // run as its own pass, Mario's placement: sim/recompute_actions.h),
  // placed by the simulator, not written in schedules (no PyTorch action).
  kRecompute,       // RECOMPUTE
  kSendForward,     // SEND_F: send this stage's activation to stage + 1
  kRecvForward,     // RECV_F: receive this stage's input from stage - 1
  kSendBackward,    // SEND_B: send this stage's input gradient to stage - 1
  kRecvBackward,    // RECV_B: receive the output gradient from stage + 1
  // Activation offload (sim/offload.h): copies over the GPU's host link,
  // placed by the simulator, not written in schedules (no PyTorch action).
  kOffload,  // OFFLOAD: copy the stage's activations of the micro-batch to host memory
  kReload,   // RELOAD: copy them back for its backward
};

struct Action {
  std::int32_t stage = 0;
  std::int32_t microbatch = 0;
  OpKind kind = OpKind::kForward;
  // Set on a forward that runs as one unit with the backward right after it
  // on the same rank: DualPipe's overlapped "F&B" pair (PyTorch's
  // OVERLAP_F_B). The pair starts once both inputs are there.
  bool overlapped = false;

  friend bool operator==(const Action&, const Action&) = default;
};

// The compute kinds lead the enum: F, B, I, W, RECOMPUTE.
constexpr int kComputeKinds = 5;
constexpr bool is_compute(OpKind kind) { return kind <= OpKind::kRecompute; }
constexpr bool is_host_copy(OpKind kind) { return kind == OpKind::kOffload || kind == OpKind::kReload; }
// Stage-to-stage communication (SEND/RECV).
constexpr bool is_comm(OpKind kind) { return !is_compute(kind) && !is_host_copy(kind); }
// Actions that produce the gradient sent to the previous stage.
constexpr bool produces_input_grad(OpKind kind) {
  return kind == OpKind::kBackward || kind == OpKind::kBackwardInput;
}

// "F", "B", "I", "W", "SEND_F", ...
std::string_view kind_name(OpKind kind);
// "2F0"
std::string to_string(const Action& action);
// Parses "2F0", "3SEND_F1". Accepts the legacy PyTorch name "BW" for a full
// backward. Throws InputError for anything else.
Action parse_action(std::string_view text);

}  // namespace pipeplan::sim
