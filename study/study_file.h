// A what-if study: a base configuration, the options swept (a grid, and
// lists advanced together), the metrics collected and the plots drawn.
// Options are named as on the command line (without dashes); model and
// hardware fields are swept as "model.layers" or "hardware.network.bandwidth".
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipeplan::study {

enum class StudyMode { kSimulate, kPlan, kGoodput, kServe };
enum class PlotKind { kLine, kBar, kStackedBar, kGantt };

// A closed form drawn dashed beside the measured curves, e.g.
// "(stages - 1) / (microbatches + stages - 1)"; names are swept or base
// options with '-' written '_'.
struct Reference {
  std::string label;
  std::string expression;
  std::string series;  // the series it belongs to (colour and filter); empty: all points
};

struct PlotSpec {
  std::string name;   // file stem of the SVG
  std::string title;   // empty: made from the metric and the x axis (plot_title)
  PlotKind kind = PlotKind::kLine;
  std::string x;      // a swept option, or "#" for the index into a list metric (ranks, stages)
  std::vector<std::string> y;  // metrics; stacked bars stack several
  std::string series;          // a swept option whose values become the series
  std::vector<std::pair<std::string, std::string>> where;  // only points with these values
  std::vector<Reference> references;
  std::string y_unit;          // "", "GiB", "GB", "ms", "s" or "%": how the values are shown
  bool log_x = false;
  std::string window;          // gantt: the part of the timeline, as simulate's --window
};

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

struct StudyFile {
  std::string path;
  std::string title;
  std::string question;
  StudyMode mode = StudyMode::kSimulate;
  std::vector<std::pair<std::string, std::string>> base;  // option -> value, in file order
  std::vector<SweepAxis> grid;  // cartesian product, first key outermost
  std::vector<SweepAxis> zip;   // advanced together; combined with the grid as a product
  std::vector<std::string> metrics;
  std::vector<PlotSpec> plots;
};

// Parses and checks a study file: known options (close names suggested),
// non-empty lists of equal length for zip, plots naming collected metrics
// and swept options. Throws ParseError / InputError before any work starts.
StudyFile read_study(const std::string& path);

std::string_view mode_command(StudyMode mode);  // "simulate", "plan", "goodput" or "serve"

}  // namespace pipeplan::study
