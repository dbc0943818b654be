#include "profiler/tensor_parallel_shard.h"

#include <fmt/format.h>

#include "common/error.h"

namespace pipeplan::profiler {
namespace {

int divided(int value, int tp, const char* field, const std::string& model) {
  if (value % tp != 0) {
    throw InputError(fmt::format("--tp {}: model '{}' has {} = {}, which {} does not divide; use a t that divides it",
                                 tp, model, field, value, tp));
  }
  return value / tp;
}

}  // namespace

models::ModelConfig tensor_parallel_shard(const models::ModelConfig& model, int tp) {
  if (tp < 1) throw InputError(fmt::format("--tp must be >= 1 (got {})", tp));
  if (tp == 1) return model;
  if (model.moe.enabled() || model.mla.enabled()) {
    throw InputError(fmt::format("--tp {}: the profiler shards dense models with standard attention only (model '{}')",
                                 tp, model.name));
  }
  models::ModelConfig shard = model;
  shard.heads = divided(model.heads, tp, "heads", model.name);
  shard.kv_heads = divided(model.kv_heads, tp, "kv_heads", model.name);
  shard.ffn = divided(model.ffn, tp, "ffn", model.name);
  shard.vocab = (model.vocab + tp - 1) / tp;
  return shard;
}

ProfileRequest shard_request(const ProfileRequest& request) {
  ProfileRequest shard = request;
  shard.model = tensor_parallel_shard(request.model, request.tp);
  shard.tp = 1;
  return shard;
}

}  // namespace pipeplan::profiler
