// The points of a study: the cartesian product of the grid axes (first
// key outermost) times the rows of the zip axes.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "study/study_file.h"

namespace pipeplan::study {

struct StudyPoint {
  std::size_t index = 0;
  std::vector<std::pair<std::string, std::string>> values;  // swept option -> value, grid then zip
  // The value of a swept option, or "" when it is not swept.
  std::string value_of(const std::string& key) const;
};

// Saturates instead of overflowing, so huge studies are refused cleanly.
std::size_t point_count(const StudyFile& study);
// How many points have these values (a plot's `where`), without expanding
// them; saturates as point_count does.
std::size_t matching_count(const StudyFile& study, const std::vector<std::pair<std::string, std::string>>& where);
std::vector<StudyPoint> expand_points(const StudyFile& study);

}  // namespace pipeplan::study
