#include "study/study_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "commands/in_process.h"
#include "common/close_names.h"
#include "common/error.h"
#include "common/yaml_fields.h"
#include "sim/output/svg_gantt.h"
#include "study/expression.h"
#include "study/sweep.h"

namespace pipeplan::study {
namespace {

constexpr std::string_view kStudyKeys = "title, question, mode, base, sweep, metrics, plots";
constexpr std::array<std::string_view, 7> kStudyKeyList{"title", "question", "mode", "base", "sweep", "metrics",
                                                        "plots"};

// " did you mean ...?" or the pointer to the full list.
std::string suggestion(std::string_view key, const std::vector<std::string>& names, std::string_view full_list) {
  const std::string close = did_you_mean(key, names);
  return close.empty() ? fmt::format("; see {}", full_list) : close;
}

// A plot's name becomes a file in the output folder: no path, no hidden file.
bool safe_file_stem(const std::string& name) {
  if (name.empty() || name.size() > 100 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool is_config_field(std::string_view key) { return key.starts_with("model.") || key.starts_with("hardware."); }

class StudyReader {
 public:
  explicit StudyReader(const std::string& path) : path_(path), root_(load_yaml_file(path, "the study file")) {}

  StudyFile read() {
    if (!root_.IsMap()) throw_at(path_, root_, fmt::format("a study is a map with keys {}", kStudyKeys));
    for (const auto& entry : root_) {
      const std::string key = entry.first.as<std::string>();
      if (std::find(kStudyKeyList.begin(), kStudyKeyList.end(), key) == kStudyKeyList.end()) {
        throw_at(path_, entry.first, fmt::format("unknown key '{}'; a study has {}", key, kStudyKeys));
      }
    }
    study_.path = path_;
    study_.title = optional_text("title");
    study_.question = optional_text("question");
    read_mode();
    options_ = commands::option_names(mode_command(study_.mode));
    read_base();
    read_sweep();
    read_metrics();
    read_plots();
    check_plot_points();
    return std::move(study_);
  }

 private:
  std::string optional_text(const char* key) const {
    return root_[key] ? scalar_text(root_[key], path_, key) : std::string();
  }

  void read_mode() {
    const std::string mode = root_["mode"] ? scalar_text(root_["mode"], path_, "mode") : "simulate";
    if (mode != "simulate" && mode != "plan" && mode != "goodput" && mode != "serve") {
      throw_at(path_, root_["mode"], "'mode' must be simulate, plan, goodput or serve");
    }
    study_.mode = mode == "plan"      ? StudyMode::kPlan
                  : mode == "goodput" ? StudyMode::kGoodput
                  : mode == "serve"   ? StudyMode::kServe
                                      : StudyMode::kSimulate;
  }

  // An option of the study's command, or a model/hardware field.
  void check_key(const YAML::Node& at, const std::string& key) const {
    if (is_config_field(key)) return;
    if (std::find(options_.begin(), options_.end(), key) != options_.end()) {
      if (!commands::writes_file(mode_command(study_.mode), key)) return;
      throw_at(path_, at, fmt::format("'{}' writes a file, and every point would write it: a study keeps each point's "
                                      "figures in its own report (study --out); drop it, or run `pipeplan {}` on the "
                                      "point whose file you want",
                                      key, mode_command(study_.mode)));
    }
    throw_at(path_, at, fmt::format("'{}' names no option of `pipeplan {}`{}", key, mode_command(study_.mode),
                                    suggestion(key, options_, fmt::format("`pipeplan {} --help`",
                                                                          mode_command(study_.mode)))));
  }

  // A flag's value is one of YAML 1.2's booleans, true or false: "yes", "1"
  // or "on" (YAML 1.1's) would otherwise read as off.
  void check_flag_value(const YAML::Node& at, const std::string& key, const std::string& value) const {
    if (is_config_field(key) || !commands::is_flag(mode_command(study_.mode), key)) return;
    if (value == "true" || value == "false") return;
    throw_at(path_, at, fmt::format("'{}' is a flag: give true or false (YAML 1.2's booleans), got '{}'", key, value));
  }

  void read_base() {
    const YAML::Node base = root_["base"];
    if (!base) return;
    if (!base.IsMap()) throw_at(path_, base, "'base' maps option names to values, e.g. 'schedule: 1F1B'");
    for (const auto& entry : base) {
      const std::string key = entry.first.as<std::string>();
      check_key(entry.first, key);
      study_.base.emplace_back(key, scalar_text(entry.second, path_, key));
      check_flag_value(entry.second, key, study_.base.back().second);
    }
  }

  std::vector<SweepAxis> read_axes(const YAML::Node& node, const char* where) const {
    std::vector<SweepAxis> axes;
    if (!node) return axes;
    if (!node.IsMap()) throw_at(path_, node, fmt::format("'sweep.{}' maps options to lists of values", where));
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      check_key(entry.first, key);
      SweepAxis axis{key, scalar_or_list(entry.second, path_, key)};
      for (const std::string& value : axis.values) check_flag_value(entry.second, key, value);
      if (axis.values.empty()) {
        throw_at(path_, entry.second, fmt::format("'sweep.{}.{}' is empty; give at least one value", where, key));
      }
      axes.push_back(std::move(axis));
    }
    return axes;
  }

  void read_sweep() {
    const YAML::Node sweep = root_["sweep"];
    if (!sweep) return;
    for (const auto& entry : sweep) {
      const std::string key = entry.first.as<std::string>();
      if (key != "grid" && key != "zip") throw_at(path_, entry.first, "'sweep' has 'grid' and/or 'zip'");
    }
    study_.grid = read_axes(sweep["grid"], "grid");
    study_.zip = read_axes(sweep["zip"], "zip");
    for (const SweepAxis& axis : study_.zip) {
      if (axis.values.size() != study_.zip.front().values.size()) {
        throw_at(path_, sweep["zip"], fmt::format("'sweep.zip' lists must have one length: '{}' has {}, '{}' {}",
                                                  study_.zip.front().key, study_.zip.front().values.size(), axis.key,
                                                  axis.values.size()));
      }
    }
  }

  void read_metrics() {
    const YAML::Node metrics = root_["metrics"];
    if (!metrics) throw_at(path_, root_, "a study needs 'metrics', e.g. [bubble_rate, cost_ms]");
    study_.metrics = scalar_or_list(metrics, path_, "metrics");
  }

  bool swept(const std::string& key) const {
    auto named = [&](const SweepAxis& axis) { return axis.key == key; };
    return std::any_of(study_.grid.begin(), study_.grid.end(), named) ||
           std::any_of(study_.zip.begin(), study_.zip.end(), named);
  }

  void read_plots();
  void reject_unknown_keys(const YAML::Node& map, const std::vector<std::string>& known, std::string_view what) const {
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      throw_at(path_, entry.first, fmt::format("unknown key '{}' in {}{}", key, what,
                                               suggestion(key, known, fmt::format("its keys: {}", fmt::join(known, ", ")))));
    }
  }
  PlotSpec read_plot(const YAML::Node& node) const;
  void check_plot(const YAML::Node& node, const PlotSpec& plot) const;
  // What a plot draws from the points it keeps, checked before any point
  // runs: a stack over a list's entries needs exactly one point.
  void check_plot_points() const {
    const YAML::Node plots = root_["plots"];
    for (std::size_t i = 0; i < study_.plots.size(); ++i) {
      const PlotSpec& plot = study_.plots[i];
      if (plot.kind != PlotKind::kStackedBar || plot.x != "#") continue;
      const std::size_t matching = matching_count(study_, plot.where);
      if (matching != 1) {
        throw_at(path_, plots[i], fmt::format("stacked plot '{}' over '#' stacks one point's list: its 'where' keeps {} "
                                              "points; give 'where' values that pick one",
                                              plot.name, matching));
      }
    }
  }

  std::string path_;
  YAML::Node root_;
  StudyFile study_;
  std::vector<std::string> options_;
};

PlotKind plot_kind(const std::string& text, const std::string& path, const YAML::Node& node) {
  if (text == "line") return PlotKind::kLine;
  if (text == "bar") return PlotKind::kBar;
  if (text == "stacked bar" || text == "stacked_bar") return PlotKind::kStackedBar;
  if (text == "gantt") return PlotKind::kGantt;
  throw_at(path, node, fmt::format("plot kind '{}': use line, bar, stacked bar or gantt", text));
}

void StudyReader::read_plots() {
  const YAML::Node plots = root_["plots"];
  if (!plots) return;
  if (!plots.IsSequence()) throw_at(path_, plots, "'plots' is a list of plots");
  for (const YAML::Node& node : plots) {
    PlotSpec plot = read_plot(node);
    check_plot(node, plot);
    study_.plots.push_back(std::move(plot));
  }
}

PlotSpec StudyReader::read_plot(const YAML::Node& node) const {
  if (!node.IsMap()) throw_at(path_, node, "a plot is a map: name, kind, x, y, series, where, reference");
  reject_unknown_keys(node, {"name", "title", "kind", "x", "y", "series", "where", "reference", "y_unit", "log_x",
                             "window"},
                      "a plot");
  PlotSpec plot;
  plot.name = node["name"] ? scalar_text(node["name"], path_, "name") : fmt::format("plot{}", study_.plots.size() + 1);
  if (!safe_file_stem(plot.name)) {
    throw_at(path_, node["name"], fmt::format("plot name '{}' names its SVG file in the output folder: use letters, "
                                              "digits, '-', '_' and '.', not starting with '.'",
                                              plot.name));
  }
  if (node["window"]) plot.window = scalar_text(node["window"], path_, "window");
  if (node["title"]) plot.title = scalar_text(node["title"], path_, "title");
  plot.kind = plot_kind(node["kind"] ? scalar_text(node["kind"], path_, "kind") : "line", path_, node["kind"]);
  plot.x = node["x"] ? scalar_text(node["x"], path_, "x") : "";
  if (node["y"]) plot.y = scalar_or_list(node["y"], path_, "y");
  plot.series = node["series"] ? scalar_text(node["series"], path_, "series") : "";
  plot.y_unit = node["y_unit"] ? scalar_text(node["y_unit"], path_, "y_unit") : "";
  plot.log_x = node["log_x"] && scalar_text(node["log_x"], path_, "log_x") == "true";
  if (const YAML::Node where = node["where"]) {
    for (const auto& entry : where) plot.where.emplace_back(entry.first.as<std::string>(), entry.second.as<std::string>());
  }
  if (const YAML::Node references = node["reference"]) {
    for (const YAML::Node& reference : references) {
      if (!reference.IsMap()) throw_at(path_, reference, "a reference is a map: label, expression, series");
      reject_unknown_keys(reference, {"label", "expression", "series"}, "a reference");
      plot.references.push_back({reference["label"] ? reference["label"].as<std::string>() : "closed form",
                                 scalar_text(reference["expression"], path_, "expression"),
                                 reference["series"] ? reference["series"].as<std::string>() : ""});
    }
  }
  return plot;
}

void StudyReader::check_plot(const YAML::Node& node, const PlotSpec& plot) const {
  for (const std::string& metric : plot.y) {
    if (std::find(study_.metrics.begin(), study_.metrics.end(), metric) == study_.metrics.end()) {
      // A close name in 'metrics' may be the one misspelt: both are named.
      const std::vector<std::string> close = close_names(metric, study_.metrics, 1);
      if (!close.empty()) {
        throw_at(path_, node, fmt::format("plot '{}' draws '{}', which 'metrics' does not list; it lists '{}': correct "
                                          "whichever of the two is misspelt, or add '{}' to 'metrics'",
                                          plot.name, metric, close.front(), metric));
      }
      throw_at(path_, node, fmt::format("plot '{}' draws '{}', which is not among the metrics; add it to 'metrics' "
                                        "(paths into `pipeplan {} --json`)",
                                        plot.name, metric, mode_command(study_.mode)));
    }
  }
  if (plot.kind != PlotKind::kGantt && plot.y.empty()) {
    throw_at(path_, node, fmt::format("plot '{}' needs 'y': one or more metrics", plot.name));
  }
  if (plot.x == "#" && plot.kind == PlotKind::kLine) {
    throw_at(path_, node, fmt::format("plot '{}': x '#' is the index into a list metric (ranks, stages), drawn as "
                                      "bars: use kind bar or stacked bar, or a swept option as x",
                                      plot.name));
  }
  for (const std::string& key : {plot.x, plot.series}) {
    if (!key.empty() && key != "#" && !swept(key)) {
      throw_at(path_, node, fmt::format("plot '{}' uses '{}', which is not swept", plot.name, key));
    }
  }
  for (const auto& [key, value] : plot.where) {
    if (!swept(key)) throw_at(path_, node, fmt::format("plot '{}' filters on '{}', which is not swept", plot.name, key));
  }
  static const std::vector<std::string> kUnits{"", "GiB", "GB", "ms", "s", "%"};
  if (std::find(kUnits.begin(), kUnits.end(), plot.y_unit) == kUnits.end()) {
    throw_at(path_, node, fmt::format("plot '{}': y_unit '{}' is not one of GiB, GB, ms, s, %", plot.name, plot.y_unit));
  }
  for (const Reference& reference : plot.references) parse_expression(reference.expression);
  if (!plot.window.empty()) {
    if (plot.kind != PlotKind::kGantt) throw_at(path_, node, fmt::format("plot '{}': 'window' is for gantt plots", plot.name));
    sim::parse_gantt_window(plot.window);
  }
}

}  // namespace

std::string_view mode_command(StudyMode mode) {
  switch (mode) {
    case StudyMode::kPlan: return "plan";
    case StudyMode::kGoodput: return "goodput";
    case StudyMode::kServe: return "serve";
    case StudyMode::kSimulate: break;
  }
  return "simulate";
}

StudyFile read_study(const std::string& path) {
  return read_yaml(path, [&] { return StudyReader(path).read(); });
}

}  // namespace pipeplan::study
