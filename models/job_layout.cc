#include "models/job_layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

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

}  // namespace pipeplan::models
