#include "common/close_names.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace pipeplan {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string name_key(std::string_view word) {
  std::string key;
  for (char c : word) {
    if (c == '-' || c == '_' || c == '.' || c == ' ') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

std::vector<std::string> close_names(std::string_view word, const std::vector<std::string>& candidates,
                                     std::size_t limit) {
  const std::string key = name_key(word);
  if (key.empty()) return {};
  // A third of the word's length, at least one and at most three edits.
  const std::size_t allowed = std::clamp<std::size_t>(key.size() / 3, 1, 3);
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // distance, index
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string other = name_key(candidates[i]);
    const std::size_t distance = edit_distance(key, other);
    // One inside the other counts when the shorter is at least half the longer.
    const bool comparable = 2 * std::min(key.size(), other.size()) >= std::max(key.size(), other.size());
    const bool contains = key.size() >= 3 && comparable &&
                          (other.find(key) != std::string::npos || key.find(other) != std::string::npos);
    if (distance <= allowed || contains) scored.emplace_back(contains ? std::min(distance, allowed) : distance, i);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (const auto& [distance, index] : scored) {
    if (names.size() == limit) break;
    names.push_back(candidates[index]);
  }
  return names;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  return did_you_mean(word, candidates, candidates);
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& spellings,
                         const std::vector<std::string>& names) {
  constexpr std::size_t kOffered = 3;
  std::vector<std::string> offered;
  for (const std::string& close : close_names(word, spellings, spellings.size())) {
    const auto at = static_cast<std::size_t>(std::find(spellings.begin(), spellings.end(), close) - spellings.begin());
    const std::string& name = names[at];
    if (std::find(offered.begin(), offered.end(), name) == offered.end()) offered.push_back(name);
  }
  if (offered.size() > kOffered) offered.resize(kOffered);
  if (offered.empty()) return "";
  std::string text = "; did you mean ";
  for (std::size_t i = 0; i < offered.size(); ++i) {
    text += (i == 0 ? "" : (i + 1 == offered.size() ? " or " : ", ")) + offered[i];
  }
  return text + "?";
}

}  // namespace pipeplan
