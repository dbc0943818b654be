// The schedules `plan --schedule` names: one family, a comma list of
// them, or a named set of families.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/generators/registry.h"

namespace pipeplan::planner {

// Whether `plan --schedule` names several families: a comma list, or a set
// ("auto": what the search tries by default and ZBAuto, whose own alias
// is "searched"; "zero-bubble", "looped", "v-shape"; a family's own name
// or alias, such as Interleaved1F1B's "interleaved", is that family).
bool is_schedule_set(std::string_view name);
// The families a list or set names, each once, in the order given; throws
// InputError naming an unknown item.
std::vector<const sim::ScheduleFamily*> schedule_set_families(std::string_view text);
// "auto, zero-bubble, looped, v-shape".
std::string schedule_set_names();

}  // namespace pipeplan::planner
