#include "study/sweep.h"

#include <algorithm>
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

std::size_t matching_count(const StudyFile& study, const std::vector<std::pair<std::string, std::string>>& where) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  const auto wanted = [&](const std::string& key) -> const std::string* {
    for (const auto& [name, value] : where) {
      if (name == key) return &value;
    }
    return nullptr;
  };
  // Zip rows advance together: a row matches when each of its filtered keys does.
  std::size_t count = 1;
  if (!study.zip.empty()) {
    count = 0;
    for (std::size_t row = 0; row < study.zip.front().values.size(); ++row) {
      bool matches = true;
      for (const SweepAxis& axis : study.zip) {
        if (const std::string* value = wanted(axis.key)) matches &= axis.values[row] == *value;
      }
      count += matches ? 1 : 0;
    }
  }
  for (const SweepAxis& axis : study.grid) {
    const std::string* value = wanted(axis.key);
    const std::size_t values = value == nullptr ? axis.values.size()
                                                : static_cast<std::size_t>(std::count(axis.values.begin(), axis.values.end(), *value));
    if (values > 0 && count > kMax / values) return kMax;
    count *= values;
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
