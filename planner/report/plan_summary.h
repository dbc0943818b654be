// The plan report a person reads in a minute: the headline, the layout in
// a line, each rank's memory, what was searched and rejected in three
// lines, the top plans by the columns that tell them apart, the best plan
// each framework runs, and how to run the best. At most about 40 lines of
// at most 120 columns; plan_report_text is the whole report (--verbose).
#pragma once

#include <string>

#include "planner/report/plan_report.h"

namespace pipeplan::planner {

std::string plan_report_summary(const PlanReport& report);

// Transformer layers per stage with runs folded: "5 x5, 6, 5 x9, 4".
std::string folded_counts(const step::StageSplit& split);

}  // namespace pipeplan::planner
