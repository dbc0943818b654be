#include "planner/search/schedule_sets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "common/error.h"

namespace pipeplan::planner {
namespace {

// The named sets --schedule takes beside a family's name.
struct ScheduleSet {
  std::string_view name;
  std::vector<std::string_view> families;  // empty: every family but naive
};

const std::vector<ScheduleSet>& schedule_sets() {
  static const std::vector<ScheduleSet> sets = {
      {"auto", {}},
      {"zero-bubble", {"ZBH1", "ZBH2", "InterleavedZeroBubble", "ZBVZeroBubble", "VHalf", "VMin", "ZBAuto"}},
      {"looped", {"Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble"}},
      {"v-shape", {"ZBVZeroBubble", "DualPipeV", "VHalf", "VMin"}},
  };
  return sets;
}

const ScheduleSet* find_schedule_set(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const ScheduleSet& set : schedule_sets()) {
    if (set.name == lower) return &set;
  }
  return nullptr;
}

}  // namespace

bool is_schedule_set(std::string_view name) {
  return name.find(',') != std::string_view::npos || find_schedule_set(name) != nullptr;
}

std::vector<const sim::ScheduleFamily*> schedule_set_families(std::string_view text) {
  std::vector<const sim::ScheduleFamily*> families;
  const auto add = [&](const sim::ScheduleFamily& family) {
    if (std::find(families.begin(), families.end(), &family) == families.end()) families.push_back(&family);
  };
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string_view item = text.substr(begin, end - begin);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    begin = end + 1;
    if (item.empty()) {
      throw InputError(fmt::format("--schedule '{}': an empty name in the list; give names separated by commas, "
                                   "e.g. 1F1B,Interleaved1F1B",
                                   text));
    }
    if (const ScheduleSet* set = find_schedule_set(item)) {
      if (set->families.empty()) {
        for (const sim::ScheduleFamily& family : sim::schedule_families()) {
          if (std::string_view(family.name) != "naive") add(family);
        }
      }
      for (std::string_view name : set->families) add(sim::find_schedule_family(name));
      continue;
    }
    try {
      add(sim::find_schedule_family(item));
    } catch (const InputError&) {
      throw InputError(fmt::format("--schedule: unknown schedule '{}'; use {}, a set ({}), or a comma list of them",
                                   item, sim::schedule_names(), schedule_set_names()));
    }
  }
  return families;
}

std::string schedule_set_names() {
  std::string names;
  for (const ScheduleSet& set : schedule_sets()) names += (names.empty() ? "" : ", ") + std::string(set.name);
  return names;
}

}  // namespace pipeplan::planner
