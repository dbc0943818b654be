#include "study/study_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "charts/svg_chart.h"
#include "commands/in_process.h"
#include "common/error.h"
#include "common/units.h"
#include "study/html_report.h"
#include "study/plot_data.h"

namespace pipeplan::study {
namespace {

// Which ranks went over memory; "" for a point that fit or failed (a failed
// point has no fields at all).
std::string over_memory(const PointOutcome& outcome) {
  return outcome.fields.is_object() ? outcome.fields.value("over_memory", "") : "";
}

std::string cell(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return fmt::format("{:.10g}", value.get<double>());
  return value.dump();
}

std::string csv_escape(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// Columns: list metrics spread over metric[0], metric[1], ...
std::vector<std::pair<std::string, int>> metric_columns(const StudyFile& study, const std::vector<PointOutcome>& outcomes) {
  std::vector<std::pair<std::string, int>> columns;
  for (const std::string& metric : study.metrics) {
    int width = -1;
    for (const PointOutcome& outcome : outcomes) {
      if (outcome.error.empty() && outcome.metrics.contains(metric) && outcome.metrics.at(metric).is_array()) {
        width = std::max(width, static_cast<int>(outcome.metrics.at(metric).size()));
      }
    }
    columns.emplace_back(metric, width);
  }
  return columns;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw InputError(fmt::format("--out: cannot write '{}'", path));
}

// Bytes as GiB, seconds as ms, fractions as percentages; others as they are.
std::string human_cell(const std::string& metric, const nlohmann::ordered_json& value) {
  if (!value.is_number()) return cell(value);
  const double number = value.get<double>();
  const std::string name = metric.substr(metric.rfind('.') + 1);
  if (name.find("bytes") != std::string::npos || metric.find("memory_breakdown") != std::string::npos) {
    return format_bytes(number);
  }
  if (name.ends_with("_s") && !name.ends_with("_per_s")) return format_duration(number);
  if (name.ends_with("_ms")) return format_duration(number / 1e3);
  if (name == "mfu" || name.ends_with("_rate")) return fmt::format("{:.2f} %", number * 100);
  if (name.ends_with("_per_s")) return fmt::format("{:.0f}", number);
  return cell(value);
}

// Lower is better unless the metric measures throughput.
bool higher_is_better(const std::string& metric) {
  return metric.find("tokens_per_s") != std::string::npos || metric.find("mfu") != std::string::npos;
}

std::string best_points(const StudyFile& study, const std::vector<PointOutcome>& outcomes) {
  std::string text;
  for (const PlotSpec& plot : study.plots) {
    // A list's entries (x '#') have no one best point.
    if (plot.y.empty() || plot.series.empty() || plot.x == "#") continue;
    const std::string& metric = plot.y.front();
    text += fmt::format("\n### {} ({} {}, by {})\n\n", plot_title(plot), higher_is_better(metric) ? "highest" : "lowest",
                        metric_label(metric), plot.series);
    std::map<std::string, const PointOutcome*> best;
    for (const PointOutcome* outcome : plot_points(plot, outcomes)) {
      if (!outcome->error.empty() || !outcome->metrics.at(metric).is_number()) continue;
      const std::string series = outcome->point.value_of(plot.series);
      const double value = outcome->metrics.at(metric).get<double>();
      const PointOutcome*& current = best[series];
      if (current == nullptr || (higher_is_better(metric) ? value > current->metrics.at(metric).get<double>()
                                                          : value < current->metrics.at(metric).get<double>())) {
        current = outcome;
      }
    }
    for (const auto& [series, outcome] : best) {
      std::string where;
      for (const auto& [key, value] : outcome->point.values) {
        where += (where.empty() ? "" : ", ") + series_label(key, value);
      }
      text += fmt::format("- {}: {} {} (point {}: {})\n", series_label(plot.series, series), metric_label(metric),
                          human_cell(metric, outcome->metrics.at(metric)), outcome->point.index, where);
    }
  }
  return text;
}

// Whether the points say if they fit in memory (simulate with a model).
bool reports_fit(const std::vector<PointOutcome>& outcomes) {
  return std::any_of(outcomes.begin(), outcomes.end(), [](const PointOutcome& o) { return o.fields.contains("fits"); });
}

// The point's error, or what it lacks: "no ranks_detail.3.busy_ms: ...".
std::string outcome_note(const PointOutcome& outcome) {
  if (!outcome.error.empty()) return outcome.error;
  std::string note;
  for (const auto& [metric, why] : outcome.metric_errors) note += fmt::format("{}{}", note.empty() ? "" : "; ", why);
  return note;
}

using Table = std::vector<std::vector<std::string>>;
using ShowCell = std::function<std::string(const std::string& metric, const nlohmann::ordered_json& value)>;

// How a table says its columns: as paths (results.csv, for programs) or in
// words (the reports, for people: "peak memory", lists of more than
// kListColumns entries folded into their largest).
struct TableStyle {
  ShowCell show;
  bool words = false;
};
constexpr int kListColumns = 4;

// A list metric's largest entry and where it is, "69.47 GiB (5)".
std::string largest_entry(const std::string& metric, const nlohmann::ordered_json& list, const ShowCell& show) {
  std::size_t at = 0;
  for (std::size_t i = 1; i < list.size(); ++i) {
    if (list[i].is_number() && (!list[at].is_number() || list[i].get<double>() > list[at].get<double>())) at = i;
  }
  return list.empty() ? "" : fmt::format("{} ({})", show(metric, list[at]), at);
}

// The header, then a row per point: swept values, metrics (lists spread
// over columns), whether it fits, and its error or missing metrics.
Table results_table(const StudyFile& study, const std::vector<PointOutcome>& outcomes, const TableStyle& style) {
  const ShowCell& show = style.show;
  auto columns = metric_columns(study, outcomes);
  std::vector<bool> folded;
  for (auto& [metric, width] : columns) {
    folded.push_back(style.words && width > kListColumns);
    if (folded.back()) width = -1;
  }
  const bool fit = reports_fit(outcomes);
  std::vector<std::string> header{"point"};
  if (!outcomes.empty()) {
    for (const auto& [key, value] : outcomes.front().point.values) header.push_back(key);
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const auto& [metric, width] = columns[c];
    const std::string name = style.words ? metric_label(metric) : metric;
    if (folded[c]) header.push_back(name + ", largest (at)");
    if (width < 0 && !folded[c]) header.push_back(name);
    for (int i = 0; i < width; ++i) {
      // A list over ranks names its entries by rank.
      const bool ranks = metric.rfind("ranks_detail", 0) == 0;
      if (!style.words) {
        header.push_back(fmt::format("{}[{}]", name, i));
      } else {
        header.push_back(ranks ? fmt::format("{}, rank {}", name, i) : fmt::format("{} {}", name, i));
      }
    }
  }
  if (fit) header.insert(header.end(), {"fits", "over_memory"});
  header.push_back("error");
  Table table{std::move(header)};
  for (const PointOutcome& outcome : outcomes) {
    std::vector<std::string> row{std::to_string(outcome.point.index)};
    for (const auto& [key, value] : outcome.point.values) row.push_back(value);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& [metric, width] = columns[c];
      const bool value = outcome.error.empty() && outcome.metrics.contains(metric) && !outcome.metrics.at(metric).is_null();
      if (folded[c]) {
        const bool list = value && outcome.metrics.at(metric).is_array();
        row.push_back(list ? largest_entry(metric, outcome.metrics.at(metric), show) : "");
        continue;
      }
      if (width < 0) row.push_back(value ? show(metric, outcome.metrics.at(metric)) : "");
      for (int i = 0; i < width; ++i) {
        const bool has = value && outcome.metrics.at(metric).is_array() &&
                         i < static_cast<int>(outcome.metrics.at(metric).size());
        row.push_back(has ? show(metric, outcome.metrics.at(metric)[static_cast<std::size_t>(i)]) : "");
      }
    }
    if (fit) {
      row.push_back(outcome.fields.contains("fits") ? cell(outcome.fields.at("fits")) : "");
      row.push_back(over_memory(outcome));
    }
    row.push_back(outcome_note(outcome));
    table.push_back(std::move(row));
  }
  return table;
}

std::string markdown_escape(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '|') escaped += '\\';
    escaped += c == '\n' ? ' ' : c;
  }
  return escaped;
}

std::string markdown_table(const Table& table) {
  std::string text;
  for (std::size_t r = 0; r < table.size(); ++r) {
    text += "|";
    for (const std::string& value : table[r]) text += fmt::format(" {} |", markdown_escape(value));
    text += '\n';
    if (r == 0) {
      text += "|";
      for (std::size_t i = 0; i < table[r].size(); ++i) text += "---|";
      text += '\n';
    }
  }
  return text;
}

}  // namespace

std::string results_csv(const StudyFile& study, const std::vector<PointOutcome>& outcomes) {
  std::string csv;
  const TableStyle paths{[](const std::string&, const nlohmann::ordered_json& value) { return cell(value); }, false};
  for (const auto& row : results_table(study, outcomes, paths)) {
    for (std::size_t i = 0; i < row.size(); ++i) csv += fmt::format("{}{}", i ? "," : "", csv_escape(row[i]));
    csv += '\n';
  }
  return csv;
}

std::string results_json(const StudyFile& study, const std::vector<PointOutcome>& outcomes) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const PointOutcome& outcome : outcomes) {
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& [key, value] : outcome.point.values) values[key] = value;
    nlohmann::ordered_json point = {{"point", outcome.point.index}, {"values", values}, {"arguments", outcome.arguments}};
    if (outcome.error.empty()) {
      point["metrics"] = outcome.metrics;
      if (!outcome.metric_errors.empty()) point["missing"] = outcome.metric_errors;
      if (outcome.fields.contains("fits")) {
        point["fits"] = outcome.fields.at("fits");
        point["over_memory"] = over_memory(outcome);
      }
    } else {
      point["error"] = outcome.error;
    }
    points.push_back(std::move(point));
  }
  return nlohmann::ordered_json{{"title", study.title},
                                {"question", study.question},
                                {"mode", std::string(mode_command(study.mode))},
                                {"points", std::move(points)}}
             .dump(2) +
         "\n";
}

std::string report_markdown(const StudyFile& study, const std::vector<PointOutcome>& outcomes,
                            const std::vector<std::string>& plot_files) {
  std::string text = fmt::format("# {}\n\n{}\n\n## Results\n\n", study.title.empty() ? study.path : study.title,
                                 study.question);
  text += markdown_table(results_table(study, outcomes, {human_cell, true}));
  text += "\n## Best point per series\n" + best_points(study, outcomes) + "\n## Plots\n\n";
  for (const std::string& file : plot_files) text += fmt::format("![{}]({})\n", file, file);
  return text;
}

std::vector<std::string> write_study_outputs(const StudyFile& study, const std::vector<PointOutcome>& outcomes,
                                             const std::string& out_dir) {
  std::vector<std::string> written{"results.csv", "results.json"};
  write_file(out_dir + "/results.csv", results_csv(study, outcomes));
  write_file(out_dir + "/results.json", results_json(study, outcomes));
  std::vector<std::pair<std::string, std::string>> plots;  // title, svg
  std::vector<std::string> plot_files;
  for (const PlotSpec& plot : study.plots) {
    const std::string file = plot.name + ".svg";
    std::string svg;
    if (plot.kind == PlotKind::kGantt) {
      const std::vector<const PointOutcome*> points = plot_points(plot, outcomes);
      if (points.empty()) throw InputError(fmt::format("gantt plot '{}' matches no point", plot.name));
      std::vector<std::string> args = points.front()->arguments;
      args.insert(args.end(), {"--svg", out_dir + "/" + file});
      if (!plot.window.empty()) args.insert(args.end(), {"--window", plot.window});
      commands::run_in_process("simulate", args);
      std::ifstream in(out_dir + "/" + file);
      svg.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else {
      svg = charts::render_chart_svg(chart_for(study, plot, outcomes));
      write_file(out_dir + "/" + file, svg);
    }
    plots.emplace_back(plot_title(plot), svg);
    plot_files.push_back(file);
    written.push_back(file);
  }
  write_file(out_dir + "/report.md", report_markdown(study, outcomes, plot_files));
  write_file(out_dir + "/report.html", report_html(study, results_table(study, outcomes, {human_cell, true}), plots));
  written.insert(written.end(), {"report.md", "report.html"});
  return written;
}

}  // namespace pipeplan::study
