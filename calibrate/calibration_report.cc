#include "calibrate/calibration_report.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "common/quote.h"
#include "common/units.h"

namespace pipeplan::calibrate {
namespace {

// A YAML double-quoted scalar: any text reads back as itself.
std::string double_quoted(const std::string& text) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << text;
  return out.c_str();
}

std::string percent(double share) { return fmt::format("{:+.2f} %", share * 100); }

std::string error_line(const char* what, const ErrorSummary& summary) {
  return fmt::format("  {:<9} {:>8}: mean |error| {:.2f} %, max {:.2f} %\n", what, format_plural(summary.runs, "run"),
                     summary.mean_abs * 100, summary.max_abs * 100);
}

std::string standard_error_text(const FittedParameter& parameter) {
  if (parameter.standard_error) return fmt::format("+- {:.3g}", *parameter.standard_error);
  if (parameter.sensitivity) {
    return fmt::format("(exactly determined: no standard error; a step time measured 1 % longer moves it {:+.2f} %)",
                       *parameter.sensitivity * 100);
  }
  return "(as many runs as parameters: no standard error)";
}

// Fitted values by their dotted names ("gpu.efficiency.matmul.max"),
// nested as the hardware file nests them.
struct YamlTree {
  std::string value;  // a leaf's
  std::map<std::string, YamlTree> children;
  void add(std::string_view path, const std::string& leaf) {
    const std::size_t dot = path.find('.');
    YamlTree& child = children[std::string(path.substr(0, dot))];
    if (dot == std::string_view::npos) {
      child.value = leaf;
    } else {
      child.add(path.substr(dot + 1), leaf);
    }
  }
  void write(std::string& yaml, int depth) const {
    for (const auto& [key, child] : children) {
      yaml += fmt::format("{:{}}{}:", "", 2 * depth, key);
      if (child.children.empty()) {
        yaml += fmt::format(" {}\n", child.value);
      } else {
        yaml += "\n";
        child.write(yaml, depth + 1);
      }
    }
  }
};

}  // namespace

std::string runs_table(const std::vector<RunPrediction>& rows) {
  // The names' column as wide as the longest, so that every row lines up.
  std::size_t width = 28;
  for (const RunPrediction& row : rows) width = std::max(width, row.run.name.size());
  std::string text = fmt::format("  {:<{}} {:>13} {:>13} {:>9} {:>8} {:>8}  {}\n", "run", width, "measured",
                                 "predicted", "error", "MFU", "pred MFU", "");
  for (const RunPrediction& row : rows) {
    text += fmt::format("  {:<{}} {:>13} {:>13} {:>9} {:>8} {:>8}  {}{}\n", row.run.name, width,
                        format_duration(row.run.step_time_s), format_duration(row.predicted_s), percent(row.error),
                        row.run.mfu ? fmt::format("{:.1f} %", *row.run.mfu * 100) : "-",
                        fmt::format("{:.1f} %", row.predicted_mfu * 100), row.held_out ? "held out" : "",
                        row.fits_memory ? ""
                                        : fmt::format(" DOES NOT FIT in the model ({} per GPU)",
                                                      format_bytes(static_cast<double>(row.predicted_peak_bytes))));
  }
  if (std::any_of(rows.begin(), rows.end(), [](const RunPrediction& row) { return row.run.mfu.has_value(); })) {
    text +=
        "  MFU: as each run's source counts it; pred MFU: pipeplan's count (Narayanan et al.'s FLOPs, attention's "
        "whole s x s) at the predicted time. Sources count FLOPs their own way (GQA, causal attention), so compare "
        "times, not MFU\n";
  }
  for (const RunPrediction& row : rows) {
    if (row.run.peak_memory_bytes) {
      text += fmt::format("  {}: peak memory measured {}, predicted {}\n", row.run.name,
                          format_bytes(*row.run.peak_memory_bytes),
                          format_bytes(static_cast<double>(row.predicted_peak_bytes)));
    }
    if (row.run.pipeline_only) text += fmt::format("  {}: the pipeline alone ({})\n", row.run.name, row.run.source);
  }
  return text;
}

nlohmann::ordered_json runs_json(const std::vector<RunPrediction>& rows) {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const RunPrediction& row : rows) {
    nlohmann::ordered_json item{{"name", row.run.name},
                                {"place", row.run.place},
                                {"measured_step_s", row.run.step_time_s},
                                {"predicted_step_s", row.predicted_s},
                                {"error", row.error},
                                {"predicted_mfu", row.predicted_mfu},
                                {"predicted_peak_bytes", row.predicted_peak_bytes},
                                {"fits", row.fits_memory},
                                {"held_out", row.held_out}};
    if (row.run.mfu) item["measured_mfu"] = *row.run.mfu;
    if (row.run.peak_memory_bytes) item["measured_peak_bytes"] = *row.run.peak_memory_bytes;
    if (row.run.pipeline_only) item["pipeline_only"] = true;
    if (!row.run.source.empty()) item["source"] = row.run.source;
    json.push_back(std::move(item));
  }
  return json;
}

std::string calibration_text(const Calibration& calibration) {
  std::string text =
      fmt::format("calibrated {} to {} ({})\n", calibration.base, format_plural(calibration.fitted.runs, "run"),
                  format_plural(calibration.evaluations, "simulation"));
  if (!calibration.converged) {
    text += "  NOT CONVERGED: the fit stopped on its evaluation budget; the values below are where it stopped\n";
  }
  for (const FittedParameter& parameter : calibration.parameters) {
    text += fmt::format("  {:<36} {:>10.6g} (was {:.6g}) {}{}{}\n", parameter.parameter.name, parameter.value,
                        parameter.initial, standard_error_text(parameter),
                        parameter.at_bound ? fmt::format("  AT ITS BOUND [{:g}, {:g}]: the runs ask for more than "
                                                         "this parameter can physically give",
                                                         parameter.parameter.lower, parameter.parameter.upper)
                                           : "",
                        parameter.poorly_determined() ? "  POORLY DETERMINED by these runs: read it as a guess" : "");
  }
  text += runs_table(calibration.rows);
  if (calibration.exactly_determined()) {
    text += "  EXACTLY DETERMINED: as many runs as parameters, so each run is met exactly (residual zero) and "
            "nothing is left to validate the fit; measure more runs (--holdout then checks it)\n";
  }
  text += error_line("fitted", calibration.fitted);
  if (calibration.held_out.runs > 0) text += error_line("held out", calibration.held_out);
  return text;
}

nlohmann::ordered_json calibration_json(const Calibration& calibration) {
  nlohmann::ordered_json parameters = nlohmann::ordered_json::array();
  for (const FittedParameter& parameter : calibration.parameters) {
    parameters.push_back({{"name", parameter.parameter.name},
                          {"initial", parameter.initial},
                          {"value", parameter.value},
                          {"standard_error", parameter.standard_error ? nlohmann::ordered_json(*parameter.standard_error)
                                                                      : nlohmann::ordered_json(nullptr)},
                          {"lower", parameter.parameter.lower},
                          {"upper", parameter.parameter.upper},
                          {"at_bound", parameter.at_bound},
                          {"poorly_determined", parameter.poorly_determined()},
                          {"sensitivity_per_percent", parameter.sensitivity ? nlohmann::ordered_json(*parameter.sensitivity)
                                                                            : nlohmann::ordered_json(nullptr)}});
  }
  auto summary = [](const ErrorSummary& errors) {
    return nlohmann::ordered_json{{"runs", errors.runs}, {"mean_abs_error", errors.mean_abs}, {"max_abs_error", errors.max_abs}};
  };
  nlohmann::ordered_json json{{"base", calibration.base},
                              {"parameters", parameters},
                              {"runs", runs_json(calibration.rows)},
                              {"fitted", summary(calibration.fitted)},
                              {"evaluations", calibration.evaluations},
                              {"converged", calibration.converged},
                              {"exactly_determined", calibration.exactly_determined()}};
  if (calibration.held_out.runs > 0) json["held_out"] = summary(calibration.held_out);
  return json;
}

std::string calibrated_hardware_yaml(const Calibration& calibration, const std::string& name,
                                     const std::string& runs_named) {
  // A path or a run's name with a newline in it would end a comment and
  // start a key: each kept on its line.
  const std::string runs_file = one_line(runs_named);
  std::string yaml = fmt::format(
      "# Fitted by `pipeplan calibrate {}` to {}; everything not below is\n"
      "# {}'s. Standard errors (1 sigma) and each run's residual:\n",
      runs_file, format_plural(calibration.fitted.runs, "measured run"), calibration.base);
  if (calibration.exactly_determined()) {
    yaml += "# EXACTLY DETERMINED: as many runs as parameters, residual zero, not validated by any run.\n";
  }
  for (const FittedParameter& parameter : calibration.parameters) {
    yaml += fmt::format("#   {} = {:.6g} {} ({}; range [{:g}, {:g}])\n", parameter.parameter.name, parameter.value,
                        standard_error_text(parameter), parameter.parameter.meaning, parameter.parameter.lower,
                        parameter.parameter.upper);
  }
  for (const RunPrediction& row : calibration.rows) {
    yaml += fmt::format("#   {}: measured {}, predicted {} ({}){}\n", one_line(row.run.name),
                        format_duration(row.run.step_time_s),
                        format_duration(row.predicted_s), percent(row.error), row.held_out ? ", held out" : "");
  }
  yaml += fmt::format("name: {}\nbase: {}\nsource: {}\n", double_quoted(name), double_quoted(calibration.base),
                      double_quoted("fitted by pipeplan calibrate to " + runs_file));
  YamlTree tree;
  for (const FittedParameter& parameter : calibration.parameters) {
    tree.add(parameter.parameter.name, fmt::format("{}", parameter.value));
  }
  tree.write(yaml, 0);
  return yaml;
}

}  // namespace pipeplan::calibrate
