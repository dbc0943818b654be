// The batch one serving step runs through a pipeline stage, summed over its
// sequences: a sequence adds q new tokens after c cached ones (a prefill
// chunk, or q = 1 to decode). The serving simulation (sim/) forms it; the
// cost model (models/) prices it.
#pragma once

namespace pipeplan {

struct StepLoad {
  int tokens = 0;   // new tokens, the sum of q
  int sampled = 0;  // sequences whose step ends in a sampled token (their logits)
  // Causal query-key pairs, q c + q (q + 1) / 2 per sequence: of prefill
  // chunks (q > 1) and of decode tokens.
  double prefill_pairs = 0;
  double decode_pairs = 0;
  double context_tokens = 0;  // cached keys read per layer: c per sequence
};

}  // namespace pipeplan
