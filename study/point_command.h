// The command line a study point runs: the base options with the point's
// swept values on top. Swept model or hardware fields ("model.layers",
// "hardware.network.bandwidth") become derived YAML files, written where
// the study's outputs go so that every point can be rerun by hand.
#pragma once

#include <string>
#include <vector>

#include "study/study_file.h"
#include "study/sweep.h"

namespace pipeplan::study {

// Throws InputError for a model/hardware field sweep without a base model
// or hardware, or a field the derived file rejects.
std::vector<std::string> point_arguments(const StudyFile& study, const StudyPoint& point,
                                         const std::string& config_dir);

// The value an option has at a point (swept or base), or "" if unset.
std::string option_value(const StudyFile& study, const StudyPoint& point, const std::string& key);

}  // namespace pipeplan::study
