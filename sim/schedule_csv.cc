#include "sim/schedule_csv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/quote.h"
#include "common/text_file.h"

namespace pipeplan::sim {
namespace {

constexpr std::string_view kOverlapSuffix = "OVERLAP_F_B";

struct Cell {
  std::string text;
  int column;  // 1-based character column of the cell's start
};

// Splits one CSV line (RFC 4180 quoting, as Python's csv module writes it).
std::vector<Cell> split_line(const std::string& line) {
  std::vector<Cell> cells;
  Cell cell{"", 1};
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell.text += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell.text += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell = Cell{"", static_cast<int>(i) + 2};
    } else {
      cell.text += c;
    }
  }
  cells.push_back(std::move(cell));
  return cells;
}

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return "";
  const auto end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

// Without "BW" cells, a file whose "B"s all come with a "W" of the same
// (stage, micro-batch) and has no "I" is in PyTorch 2.5's spelling, where
// "B" was the input-gradient part.
bool reads_as_legacy_split(const std::vector<std::vector<Action>>& ranks) {
  std::set<std::pair<int, int>> full, weight;
  for (const auto& actions : ranks) {
    for (const Action& action : actions) {
      if (action.kind == OpKind::kBackwardInput) return false;
      if (action.kind == OpKind::kBackward) full.insert({action.stage, action.microbatch});
      if (action.kind == OpKind::kBackwardWeight) weight.insert({action.stage, action.microbatch});
    }
  }
  return !full.empty() && full == weight;
}

class CsvReader {
 public:
  explicit CsvReader(std::string source) : source_(std::move(source)) {}

  Schedule read(std::istream& in) {
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
    if (lines.empty()) throw ParseError(source_, 1, 1, "the schedule CSV is empty; it needs one row per rank");
    legacy_ = uses_legacy_names(lines);
    schedule_.name = "csv:" + std::filesystem::path(source_).filename().string();
    schedule_.ranks = static_cast<int>(lines.size());
    schedule_.actions.resize(lines.size());
    idle_slots_.resize(lines.size());
    for (std::size_t row = 0; row < lines.size(); ++row) read_row(static_cast<int>(row), lines[row]);
    keep_idle_slots();
    if (!legacy_ && backward_is_split_legacy_style()) relabel_legacy_backwards();
    infer_shape();
    return std::move(schedule_);
  }

 private:
  // PyTorch 2.5 wrote "BW" for a full backward and "B" for the input-gradient part.
  // A "BW" right after a stage number, in a cell or inside an overlapped pair.
  static bool uses_legacy_names(const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
      for (const Cell& cell : split_line(line)) {
        const std::string& text = cell.text;
        for (auto at = text.find("BW"); at != std::string::npos; at = text.find("BW", at + 1)) {
          if (at > 0 && std::isdigit(static_cast<unsigned char>(text[at - 1]))) return true;
        }
      }
    }
    return false;
  }

  void read_row(int rank, const std::string& line) {
    std::vector<int>& idle = idle_slots_[static_cast<std::size_t>(rank)];
    idle.assign(1, 0);
    for (const Cell& cell : split_line(line)) {
      const std::string text = trim(cell.text);
      if (text.empty()) {  // an idle slot
        ++idle.back();
        continue;
      }
      try {
        const std::size_t before = schedule_.actions[static_cast<std::size_t>(rank)].size();
        read_cell(rank, text);
        const std::size_t added = schedule_.actions[static_cast<std::size_t>(rank)].size() - before;
        for (std::size_t k = 0; k < added; ++k) idle.push_back(0);
      } catch (const ParseError&) {
        throw;
      } catch (const InputError& error) {
        throw ParseError(source_, rank + 1, cell.column, error.what());
      }
    }
  }

  // Keeps the idle cells only when there are any.
  void keep_idle_slots() {
    for (const auto& idle : idle_slots_) {
      for (int count : idle) {
        if (count > 0) {
          schedule_.idle_slots = std::move(idle_slots_);
          return;
        }
      }
    }
  }

  void read_cell(int rank, const std::string& text) {
    auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
    if (text.starts_with('(')) {
      read_overlap_pair(text, actions);
      return;
    }
    if (is_runtime_action(text)) {
      ++schedule_.dropped_runtime_actions;
      return;
    }
    actions.push_back(parse_cell(text));
  }

  // "(0F7;7B3)OVERLAP_F_B": a forward and a backward run as one unit.
  void read_overlap_pair(const std::string& text, std::vector<Action>& actions) {
    const auto close = text.find(')');
    if (close == std::string::npos || text.substr(close + 1) != kOverlapSuffix) {
      throw InputError(fmt::format("{} is not an overlapped pair; write it as (0F7;7B3)OVERLAP_F_B", quoted_input(text)));
    }
    const std::string inner = text.substr(1, close - 1);
    const auto separator = inner.find(';');
    if (separator == std::string::npos) {
      throw InputError(fmt::format("{} needs two actions separated by ';'", quoted_input(text)));
    }
    Action forward = parse_cell(trim(inner.substr(0, separator)));
    const Action backward = parse_cell(trim(inner.substr(separator + 1)));
    if (forward.kind != OpKind::kForward || !produces_input_grad(backward.kind)) {
      throw InputError(fmt::format("{} must pair a forward with a backward, e.g. (0F7;7B3)OVERLAP_F_B", quoted_input(text)));
    }
    forward.overlapped = true;
    actions.push_back(forward);
    actions.push_back(backward);
  }

  Action parse_cell(const std::string& text) const {
    Action action = parse_action(text);
    const bool spelled_b = action.kind == OpKind::kBackward && text.find("BW") == std::string::npos;
    if (legacy_ && spelled_b) action.kind = OpKind::kBackwardInput;
    return action;
  }

  bool backward_is_split_legacy_style() const { return reads_as_legacy_split(schedule_.actions); }

  void relabel_legacy_backwards() {
    for (auto& actions : schedule_.actions) {
      for (Action& action : actions) {
        if (action.kind == OpKind::kBackward) action.kind = OpKind::kBackwardInput;
      }
    }
  }

  void infer_shape() {
    int max_stage = -1;
    int max_microbatch = -1;
    std::size_t count = 0;
    for (const auto& actions : schedule_.actions) {
      count += actions.size();
      for (const Action& action : actions) {
        max_stage = std::max(max_stage, action.stage);
        max_microbatch = std::max(max_microbatch, action.microbatch);
      }
    }
    if (max_stage < 0) throw ParseError(source_, 1, 1, "the schedule CSV holds no actions");
    // Every stage runs every micro-batch's forward, so no index reaches the
    // number of actions: checked before anything is sized by an index.
    const auto largest = static_cast<std::size_t>(std::max(max_stage, max_microbatch));
    if (largest >= count) {
      throw ParseError(source_, 1, 1,
                       fmt::format("{} {} in a file of {} action{}: every stage runs every micro-batch's forward, "
                                   "so stages and micro-batches are numbered from 0 with none missing",
                                   max_stage >= max_microbatch ? "stage" : "micro-batch", largest, count,
                                   count == 1 ? "" : "s"));
    }
    schedule_.stages = max_stage + 1;
    schedule_.microbatches = max_microbatch + 1;
    schedule_.stage_to_rank.assign(static_cast<std::size_t>(schedule_.stages), -1);
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      for (const Action& action : schedule_.actions[static_cast<std::size_t>(rank)]) place(action.stage, rank);
    }
    check_placement();
  }

  void place(int stage, int rank) {
    int& owner = schedule_.stage_to_rank[static_cast<std::size_t>(stage)];
    if (owner >= 0 && owner != rank) {
      throw ParseError(source_, rank + 1, 1,
                       fmt::format("stage {} appears on rank {} and on rank {}; a stage lives on one rank", stage,
                                   owner, rank));
    }
    owner = rank;
  }

  void check_placement() const {
    std::vector<int> per_rank(static_cast<std::size_t>(schedule_.ranks), 0);
    for (int stage = 0; stage < schedule_.stages; ++stage) {
      const int owner = schedule_.stage_to_rank[static_cast<std::size_t>(stage)];
      if (owner < 0) {
        throw ParseError(source_, 1, 1, fmt::format("stage {} appears in no row; stages must be 0..{} with none "
                                                    "missing",
                                                    stage, schedule_.stages - 1));
      }
      ++per_rank[static_cast<std::size_t>(owner)];
    }
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      if (per_rank[static_cast<std::size_t>(rank)] != per_rank.front()) {
        throw ParseError(source_, rank + 1, 1,
                         fmt::format("rank {} holds {} stages but rank 0 holds {}; every rank must hold the same "
                                     "number of stages",
                                     rank, per_rank[static_cast<std::size_t>(rank)], per_rank.front()));
      }
    }
  }

  // "1UNSHARD", "0RESHARD", "0REDUCE_GRAD", "2REDUCE_GRAD3": what PyTorch's
  // runtime adds for FSDP (unshard, reshard) and for each stage's gradient
  // reduction after its last backward.
  static bool is_runtime_action(std::string_view text) {
    const auto kind = text.find_first_not_of("0123456789");
    if (kind == 0 || kind == std::string_view::npos) return false;
    for (std::string_view name : {"UNSHARD", "RESHARD", "REDUCE_GRAD"}) {
      if (text.substr(kind, name.size()) != name) continue;
      const std::string_view rest = text.substr(kind + name.size());
      if (rest.find_first_not_of("0123456789") == std::string_view::npos) return true;
    }
    return false;
  }

  std::string source_;
  bool legacy_ = false;
  Schedule schedule_;
  std::vector<std::vector<int>> idle_slots_;
};

}  // namespace

Schedule read_schedule_csv(std::istream& in, const std::string& source_name) {
  return CsvReader(source_name).read(in);
}

Schedule read_schedule_csv_file(const std::string& path) {
  std::istringstream in(read_text_file(path, "--schedule-csv"));
  return read_schedule_csv(in, path);
}

std::string write_schedule_csv(const Schedule& schedule) {
  // A full backward written "B" would read back as the input-gradient part
  // when every one comes with a W and no I is written: then it is written
  // in 2.5's "BW", which reads back as what it is.
  const bool full_as_bw = reads_as_legacy_split(schedule.actions);
  auto cell_text = [&](const Action& action) {
    return full_as_bw && action.kind == OpKind::kBackward
               ? fmt::format("{}BW{}", action.stage, action.microbatch)
               : to_string(action);
  };
  std::string csv;
  for (std::size_t rank = 0; rank < schedule.actions.size(); ++rank) {
    const auto& actions = schedule.actions[rank];
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      const int idle = schedule.idle_slots.empty() ? 0 : schedule.idle_slots[rank][i];
      cells.insert(cells.end(), static_cast<std::size_t>(idle), "");
      if (actions[i].overlapped && i + 1 < actions.size()) {
        cells.push_back(fmt::format("({};{}){}", cell_text(actions[i]), cell_text(actions[i + 1]), kOverlapSuffix));
        ++i;
      } else {
        cells.push_back(cell_text(actions[i]));
      }
    }
    if (!schedule.idle_slots.empty()) {
      cells.insert(cells.end(), static_cast<std::size_t>(schedule.idle_slots[rank].back()), "");
    }
    csv += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return csv;
}

}  // namespace pipeplan::sim
