// A schedule choice's contexts for the plan search: the generated
// schedule's memory profiles and span bound, and, before one is generated,
// the outline every schedule of the choice shares (its bounds are no higher
// than any of them).
#pragma once

#include <optional>

#include "planner/search/search_contexts.h"
#include "planner/search/search_space.h"

namespace pipeplan::planner {

// The schedule of a choice at (p, m) and its memory peaks, or none when its
// preconditions (micro-batches, chunks) fail.
std::optional<ScheduleContext> schedule_context(const ScheduleChoice& choice, int pp, int microbatches,
                                                bool moe_a2a_overlap);
// What every schedule of a choice at (p, m) shares, known before one is
// generated (see schedule_context.cc).
ScheduleContext schedule_outline(const ScheduleChoice& choice, int pp, int microbatches, bool moe_a2a_overlap);

}  // namespace pipeplan::planner
