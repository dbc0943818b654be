#include "step/stage_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <numeric>

#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::step {
namespace {

[[noreturn]] void bad_layout(std::string_view layout, const std::string& why) {
  throw InputError(fmt::format("--layout {}: {}; write it like 'Et*18|t*22|t*22|t*18L'", quoted_input(layout), why));
}

// A layout as written: units (one letter, or a parenthesised group) each
// with its repeat count. Nothing is expanded until the counts are checked.
struct LayoutUnit {
  std::string letters;
  std::int64_t count = 1;
};

// More stages than any model has layers; a count beyond it is refused
// before it is narrowed to int.
constexpr std::int64_t kMaxStages = 1'000'000;

// Parses "(ab|)*2" and "t*3"; commas and spaces are dropped. Parentheses do not nest.
// The multi-token prediction modules run with the loss: as many 'm' as
// --mtp-layers, just before L in its stage, or none (then they go there).
void check_mtp_letters(std::string_view layout, const std::string& flat) {
  // Their count is checked before the layout is expanded.
  const std::size_t first = flat.find('m');
  if (first == std::string::npos) return;
  if (flat.find_first_not_of('m', first) != flat.find('L')) {
    bad_layout(layout, "the multi-token prediction layers ('m') run with the loss: write them just before L, in its "
                       "stage (e.g. '...|t*2mL')");
  }
}

std::vector<LayoutUnit> layout_units(std::string_view layout) {
  std::string flat;
  for (char c : layout) {
    if (c != ',' && c != ' ') flat += c;
  }
  auto read_count = [&](std::size_t& at) -> std::int64_t {
    if (at >= flat.size() || flat[at] != '*') return 1;
    std::size_t end = at + 1;
    while (end < flat.size() && std::isdigit(static_cast<unsigned char>(flat[end]))) ++end;
    std::int64_t count = 0;
    const auto [ptr, ec] = std::from_chars(flat.data() + at + 1, flat.data() + end, count);
    if (ptr == flat.data() + at + 1) {
      throw InputError(fmt::format("--layout: '*' must be followed by a count in {}", quoted_input(layout)));
    }
    if (ec != std::errc()) {
      throw InputError(fmt::format("--layout: repeat count {} in {} is too large",
                                   std::string_view(flat).substr(at + 1, end - at - 1), quoted_input(layout)));
    }
    at = end;
    return count;
  };
  std::vector<LayoutUnit> units;
  for (std::size_t i = 0; i < flat.size();) {
    LayoutUnit unit;
    if (flat[i] == '(') {
      const auto close = flat.find(')', i);
      if (close == std::string::npos) throw InputError(fmt::format("--layout: unclosed '(' in {}", quoted_input(layout)));
      unit.letters = flat.substr(i + 1, close - i - 1);
      if (unit.letters.find('(') != std::string::npos) {
        throw InputError(fmt::format("--layout: nested parentheses are not supported in {}", quoted_input(layout)));
      }
      // Work is bounded by the letters counted below: a group without any
      // would repeat nothing, any number of times.
      if (unit.letters.empty()) bad_layout(layout, "an empty group '()' holds no layers; remove it");
      i = close + 1;
    } else {
      unit.letters = std::string(1, flat[i]);
      ++i;
    }
    for (char c : unit.letters) {
      if (std::string_view("EtmL|").find(c) == std::string_view::npos) {
        bad_layout(layout,
                   fmt::format("unknown layer letter {} (known: E, t, m, L)", quoted_input(std::string_view(&c, 1))));
      }
    }
    unit.count = read_count(i);
    units.push_back(std::move(unit));
  }
  return units;
}

// How many times `letter` appears once the units are expanded, saturating
// at the largest int64 (never expanded to count it).
std::int64_t expanded_count(const std::vector<LayoutUnit>& units, char letter) {
  constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = 0;
  for (const LayoutUnit& unit : units) {
    const auto per_unit = static_cast<std::int64_t>(std::count(unit.letters.begin(), unit.letters.end(), letter));
    std::int64_t letters = 0;
    if (__builtin_mul_overflow(unit.count, per_unit, &letters) || __builtin_add_overflow(total, letters, &total)) {
      return kSaturated;
    }
  }
  return total;
}

// Stages: one more than the '|' separators, saturating as the counts do.
std::int64_t stage_count(const std::vector<LayoutUnit>& units) {
  const std::int64_t separators = expanded_count(units, '|');
  return separators == std::numeric_limits<std::int64_t>::max() ? separators : separators + 1;
}

std::string expand(const std::vector<LayoutUnit>& units) {
  std::string out;
  for (const LayoutUnit& unit : units) {
    for (std::int64_t k = 0; k < unit.count; ++k) out += unit.letters;
  }
  return out;
}


}  // namespace

StageSplit::StageSplit(std::vector<int> boundaries) : boundaries_(std::move(boundaries)) {
  if (boundaries_.size() < 2 || boundaries_.front() != 0 ||
      !std::is_sorted(boundaries_.begin(), boundaries_.end())) {
    throw InputError("a stage split needs non-decreasing layer boundaries starting at 0");
  }
}

int StageSplit::transformer_layers(int stage) const {
  const int blocks_end = layer_count() - 1;  // the output layer's index
  const int first = std::max(first_layer(stage), 1);
  const int end = std::min(end_layer(stage), blocks_end);
  return std::max(0, end - first);
}

std::vector<int> StageSplit::transformer_layer_counts() const {
  std::vector<int> counts;
  for (int stage = 0; stage < stages(); ++stage) counts.push_back(transformer_layers(stage));
  return counts;
}

StageSplit even_split(int transformer_layers, int stages) {
  if (stages < 1) throw InputError("the number of pipeline stages must be >= 1");
  if (transformer_layers % stages != 0) {
    throw InputError(fmt::format("Megatron's even split needs the {} transformer layers divisible by the {} "
                                 "pipeline stages (p x v); give --layers or --layout, or change --pp / --virtual",
                                 transformer_layers, stages));
  }
  return split_from_counts(std::vector<int>(static_cast<std::size_t>(stages), transformer_layers / stages),
                           transformer_layers);
}

StageSplit split_from_counts(const std::vector<int>& blocks_per_stage, int transformer_layers) {
  if (blocks_per_stage.empty()) throw InputError("--layers needs one count per stage");
  for (std::size_t stage = 0; stage < blocks_per_stage.size(); ++stage) {
    if (blocks_per_stage[stage] < 1) {
      throw InputError(fmt::format("--layers: stage {} holds {} transformer layers; give every stage at least one "
                                   "(a --layout can put the embedding or the output layer alone on a stage)",
                                   stage, blocks_per_stage[stage]));
    }
  }
  const int total = std::accumulate(blocks_per_stage.begin(), blocks_per_stage.end(), 0);
  if (total != transformer_layers) {
    throw InputError(fmt::format("--layers sums to {} but the model has {} transformer layers", total,
                                 transformer_layers));
  }
  // The embedding (layer 0) joins the first stage, the output layer the last.
  std::vector<int> boundaries{0};
  int next = 1;
  for (std::size_t stage = 0; stage < blocks_per_stage.size(); ++stage) {
    next += blocks_per_stage[stage];
    const bool last = stage + 1 == blocks_per_stage.size();
    boundaries.push_back(last ? next + 1 : next);
  }
  return StageSplit(std::move(boundaries));
}

StageSplit split_from_layout(std::string_view layout, int transformer_layers, int stages, int mtp_layers) {
  const std::vector<LayoutUnit> units = layout_units(layout);
  // The counts first, so that no repeat is expanded beyond the model.
  const std::int64_t blocks = expanded_count(units, 't');
  if (blocks != transformer_layers) {
    bad_layout(layout, fmt::format("it holds {} blocks but the model has {}", blocks, transformer_layers));
  }
  if (expanded_count(units, 'E') > 1 || expanded_count(units, 'L') > 1) {
    bad_layout(layout, "it needs one E and one L");
  }
  if (const std::int64_t written = expanded_count(units, 'm'); written > 0 && written != mtp_layers) {
    bad_layout(layout, fmt::format("it holds {} multi-token prediction layer(s) ('m') but --mtp-layers is {}; give "
                                   "--mtp-layers {}",
                                   written, mtp_layers, written));
  }
  const std::int64_t layout_stages = stage_count(units);
  if (layout_stages != stages) {
    bad_layout(layout, fmt::format("it has {} stages but the pipeline has {} (p x v)", layout_stages, stages));
  }
  if (layout_stages > transformer_layers + 2) {
    bad_layout(layout, fmt::format("its {} stages cannot each hold a layer of {}", layout_stages, transformer_layers + 2));
  }
  const std::string flat = expand(units);
  check_mtp_letters(layout, flat);
  std::vector<int> boundaries{0};
  int layer = 0;
  bool seen_embedding = false, seen_output = false;
  for (char c : flat) {
    switch (c) {
      case '|': boundaries.push_back(layer); break;
      case 'E':
        if (layer != 0 || seen_embedding) bad_layout(layout, "E (the embedding) must come first, once");
        seen_embedding = true;
        ++layer;
        break;
      case 't':
        if (!seen_embedding) bad_layout(layout, "the layout must start with E");
        if (seen_output) bad_layout(layout, "a block 't' follows L");
        ++layer;
        break;
      case 'L':
        if (seen_output) bad_layout(layout, "L (the output layer and loss) appears twice");
        seen_output = true;
        ++layer;
        break;
      default: break;  // layout_units admits no other letter
    }
  }
  boundaries.push_back(layer);
  if (!seen_embedding || !seen_output) bad_layout(layout, "it needs one E and one L");
  for (std::size_t stage = 0; stage + 1 < boundaries.size(); ++stage) {
    if (boundaries[stage] == boundaries[stage + 1]) bad_layout(layout, fmt::format("stage {} holds no layer", stage));
  }
  return StageSplit(std::move(boundaries));
}

int layout_stage_count(std::string_view layout) {
  const std::int64_t stages = stage_count(layout_units(layout));
  if (stages > kMaxStages) {
    bad_layout(layout, fmt::format("it has {} stages, over the limit of {}", stages, kMaxStages));
  }
  return static_cast<int>(stages);
}

std::string format_layout(const StageSplit& split, int mtp_layers) {
  std::string layout;
  const int output = split.layer_count() - 1;
  for (int stage = 0; stage < split.stages(); ++stage) {
    if (stage > 0) layout += '|';
    if (split.first_layer(stage) == 0 && split.end_layer(stage) > 0) layout += 'E';
    const int blocks = split.transformer_layers(stage);
    if (blocks == 1) layout += 't';
    if (blocks > 1) layout += fmt::format("t*{}", blocks);
    if (split.first_layer(stage) <= output && split.end_layer(stage) > output) {
      layout += std::string(static_cast<std::size_t>(mtp_layers), 'm') + 'L';
    }
  }
  return layout;
}

std::vector<int> parse_layer_counts(std::string_view text) {
  std::vector<int> counts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    int value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || ptr != item.data() + item.size()) {
      throw InputError(fmt::format("--layers: '{}' is not a whole number; write it like 18,22,22,18", item));
    }
    counts.push_back(value);
    start = comma + 1;
  }
  return counts;
}

}  // namespace pipeplan::step
