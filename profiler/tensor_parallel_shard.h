// What one GPU of a tensor-parallel group computes, as a model of its own:
// Megatron's column- and row-parallel linears give each of the t ranks
// heads / t query heads, kv_heads / t key-value groups, ffn / t MLP columns
// and vocab / t (rounded up, as Megatron pads it) rows of the embedding and
// the LM head, at the full hidden size. Profiling this shard on one GPU
// measures a rank's compute; the collectives between the ranks are left to
// the time model, which adds them from the links.
#pragma once

#include "models/model_config.h"
#include "profiler/layer_profiler.h"

namespace pipeplan::profiler {

// Throws InputError when t does not divide the heads, the key-value groups
// or the MLP (Megatron asserts the same), naming the field.
models::ModelConfig tensor_parallel_shard(const models::ModelConfig& model, int tp);

// The request one GPU runs for `request`: its model's shard at t = 1. The
// profile written keeps the asked t (new_profile reads it from `request`).
ProfileRequest shard_request(const ProfileRequest& request);

}  // namespace pipeplan::profiler
