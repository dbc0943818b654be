#include "models/job_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "common/error.h"
#include "models/model_limits.h"

namespace pipeplan::models {

MoeDispatcher parse_moe_dispatcher(std::string_view text, std::string_view field) {
  if (text == "alltoall") return MoeDispatcher::kAllToAll;
  if (text == "deepep") return MoeDispatcher::kDeepEp;
  throw InputError(fmt::format("{} must be alltoall or deepep, got '{}'", field, text));
}

std::string_view moe_dispatcher_name(MoeDispatcher dispatcher) {
  return dispatcher == MoeDispatcher::kDeepEp ? "deepep" : "alltoall";
}

bool JobLayout::recomputes() const {
  return recompute != Recompute::kNone ||
         std::any_of(stage_recompute.begin(), stage_recompute.end(),
                     [](Recompute stage) { return stage != Recompute::kNone; });
}

bool JobLayout::recomputes_selective() const { return models::recomputes_selective(recompute, stage_recompute); }

void check_layout_counts(const JobLayout& layout) {
  // In long double: ints of any size multiply without overflow.
  const auto product = [](std::initializer_list<int> factors) {
    long double result = 1;
    for (int factor : factors) result *= factor;
    return result;
  };
  const auto check = [](long double value, long double most, std::string_view fields, std::string_view what) {
    if (value <= most) return;
    throw InputError(fmt::format("{} = {:.4g} {}, more than the {:.4g} any job has; give smaller sizes", fields,
                                 static_cast<double>(value), what, static_cast<double>(most)));
  };
  check(product({layout.tp, layout.cp, layout.pp, layout.dp}), static_cast<long double>(kMaxGpus),
        "tp x cp x pp x dp", "GPUs");
  check(product({layout.pp, std::max(layout.virtual_stages, 1)}), kMaxCount, "pp x virtual", "model chunks");
  check(product({layout.micro_batch_size, layout.microbatches, layout.dp}), kMaxSequencesPerStep,
        "micro_batch_size x microbatches x dp", "sequences per step");
}

}  // namespace pipeplan::models
