// A job layout by its degrees alone, the rest at their defaults: what
// placement tests vary.
#pragma once

#include <tuple>

#include "models/job_layout.h"

namespace pipeplan::testing {

inline models::JobLayout degrees(int tp, int cp, int pp, int dp, int ep = 1, int etp = 0) {
  models::JobLayout layout;
  std::tie(layout.tp, layout.cp, layout.pp, layout.dp, layout.ep, layout.etp) = std::tie(tp, cp, pp, dp, ep, etp);
  return layout;
}

}  // namespace pipeplan::testing
