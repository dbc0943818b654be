#include "study/sweep.h"

#include <limits>

namespace pipeplan::study {

std::string StudyPoint::value_of(const std::string& key) const {
  for (const auto& [name, value] : values) {
    if (name == key) return value;
  }
  return "";
}

std::size_t point_count(const StudyFile& study) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  std::size_t count = study.zip.empty() ? 1 : study.zip.front().values.size();
  for (const SweepAxis& axis : study.grid) {
    if (axis.values.size() > 0 && count > kMax / axis.values.size()) return kMax;
    count *= axis.values.size();
  }
  return count;
}

std::vector<StudyPoint> expand_points(const StudyFile& study) {
  const std::size_t rows = study.zip.empty() ? 1 : study.zip.front().values.size();
  const std::size_t total = point_count(study);
  std::vector<StudyPoint> points;
  points.reserve(total);
  for (std::size_t index = 0; index < total; ++index) {
    StudyPoint point;
    point.index = index;
    // Mixed radix: the last grid axis varies fastest, the zip row fastest of all.
    std::size_t rest = index / rows;
    std::vector<std::pair<std::string, std::string>> grid_values(study.grid.size());
    for (std::size_t axis = study.grid.size(); axis-- > 0;) {
      const auto& values = study.grid[axis].values;
      grid_values[axis] = {study.grid[axis].key, values[rest % values.size()]};
      rest /= values.size();
    }
    point.values = std::move(grid_values);
    for (const SweepAxis& axis : study.zip) point.values.emplace_back(axis.key, axis.values[index % rows]);
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace pipeplan::study
