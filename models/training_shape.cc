#include "models/training_shape.h"

#include <fmt/format.h>

#include "common/error.h"

namespace pipeplan::models {

Recompute parse_recompute(std::string_view text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  throw InputError(fmt::format("--recompute must be none, selective or full, got '{}'", text));
}

std::string_view recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

}  // namespace pipeplan::models
