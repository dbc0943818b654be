#include "sim/output/svg_gantt.h"

#include "common/xml_escape.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "common/units.h"

namespace pipeplan::sim {
namespace {

constexpr double kPlotWidth = 1200;
constexpr double kLeft = 90;  // room for "rank NN"
constexpr double kRight = 30;
constexpr double kTop = 48;   // room for the first title
constexpr double kRowHeight = 26;
constexpr double kRowPitch = 34;
constexpr double kDigitWidth = 14;  // px a label digit needs to stay legible
constexpr double kPanelGap = 76;    // the axis under a panel and the next panel's title

struct KindStyle {
  std::string_view letter;
  std::string_view name;
  std::string_view fill;
};

// Indexed by OpKind; mid-light fills so dark label text stays readable.
constexpr std::array<KindStyle, kComputeKinds> kKinds{{
    {"F", "forward", "#7aa6dc"},
    {"B", "backward", "#6cbf6c"},
    {"I", "backward input", "#b9e4b0"},
    {"W", "backward weight", "#f6c15b"},
    {"R", "recompute", "#c7a6e0"},
}};
constexpr std::string_view kWaitFill = "#9e9e9e";

const KindStyle& style_of(OpKind kind) { return kKinds[static_cast<std::size_t>(kind)]; }


// The smallest 1-2-5 step that gives at most 10 ticks over [0, range]; the
// step before it gave more than 10, so this one gives at least 5.
double nice_step(double range) {
  const double base = std::pow(10.0, std::floor(std::log10(range)) - 1);
  for (double scale = base;; scale *= 10) {
    for (double mult : {1.0, 2.0, 5.0}) {
      if (std::floor(range / (mult * scale) + 1e-9) + 1 <= 10) return mult * scale;
    }
  }
}

int decimals_for(double step) { return std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9))); }

// One panel per report, stacked, on one time scale over [start_s, end_s].
struct Layout {
  double start_s = 0, end_s = 0;
  std::vector<double> tops;  // each panel's first lane
  double height = 0;
  double width() const { return kLeft + kPlotWidth + kRight; }
  double x(double time_s) const { return kLeft + (time_s - start_s) / (end_s - start_s) * kPlotWidth; }
};

double report_end_s(const SimulationReport& report) {
  double end_s = report.makespan_s;
  for (const ComputeRecord& record : report.timeline->computes) end_s = std::max(end_s, record.end_s);
  for (const CommWaitRecord& record : report.timeline->comm_waits) end_s = std::max(end_s, record.end_s);
  return end_s;
}

Layout layout_of(const std::vector<GanttPanel>& panels, const GanttWindow& window) {
  double end_s = 0;
  for (const GanttPanel& panel : panels) end_s = std::max(end_s, report_end_s(*panel.report));
  if (end_s <= 0) end_s = 1e-3;
  Layout layout;
  const auto resolve = [&](double value) { return window.fraction ? value * end_s : value; };
  layout.start_s = std::clamp(resolve(window.start), 0.0, end_s);
  layout.end_s = window.end > 0 ? std::min(resolve(window.end), end_s) : end_s;
  if (layout.end_s <= layout.start_s) {
    throw InputError(fmt::format("--window starts at {:.6g} ms, after the timeline ends ({:.6g} ms)",
                                 layout.start_s * 1e3, end_s * 1e3));
  }
  double y = kTop;
  for (const GanttPanel& panel : panels) {
    layout.tops.push_back(y);
    y += panel.report->ranks * kRowPitch + kPanelGap;
  }
  layout.height = y - kPanelGap + 80;
  return layout;
}

std::string default_title(const SimulationReport& report) {
  return fmt::format("{} | p={} m={} v={} | makespan {:.3f} ms | bubble {:.1f}%", report.schedule, report.ranks,
                     report.microbatches, report.virtual_stages, report.makespan_s * 1e3, report.bubble_rate * 100);
}

void write_header(std::string& out, const Layout& layout) {
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
                 "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\">\n<style>\n",
                 layout.width(), layout.height);
  for (const KindStyle& kind : kKinds) fmt::format_to(it, ".{}{{fill:{}}}\n", kind.letter, kind.fill);
  fmt::format_to(it,
                 ".wait{{fill:{}}}\n.lane{{fill:#f4f4f4}}\n.grid{{stroke:#d0d0d0;stroke-width:1}}\n"
                 ".axis{{stroke:#333;stroke-width:1}}\n.mb{{font-size:11px;fill:#1a1a1a;text-anchor:middle;"
                 "pointer-events:none}}\n.rank{{font-size:13px;text-anchor:end}}\n"
                 ".tick{{font-size:11px;text-anchor:middle}}\n.key{{font-size:12px}}\n"
                 ".title{{font-size:15px;font-weight:bold}}\n</style>\n"
                 "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                 kWaitFill);
}

void write_title(std::string& out, double top, const std::string& title) {
  fmt::format_to(std::back_inserter(out), "<text class=\"title\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", kLeft,
                 top - 20, escape_xml(title));
}

void write_lanes(std::string& out, double top, int ranks) {
  auto it = std::back_inserter(out);
  for (int rank = 0; rank < ranks; ++rank) {
    const double y = top + rank * kRowPitch;
    fmt::format_to(it, "<rect class=\"lane\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\"/>\n",
                   kLeft, y, kPlotWidth, kRowHeight);
    fmt::format_to(it, "<text class=\"rank\" x=\"{:.0f}\" y=\"{:.1f}\">rank {}</text>\n", kLeft - 10,
                   y + kRowHeight / 2 + 4, rank);
  }
}

// Grid lines and labels at 1-2-5 steps in milliseconds over the window.
void write_axis(std::string& out, const Layout& layout, double top, double bottom) {
  auto it = std::back_inserter(out);
  const double start_ms = layout.start_s * 1e3, end_ms = layout.end_s * 1e3;
  const double step_ms = nice_step(end_ms - start_ms);
  const int decimals = decimals_for(step_ms);
  fmt::format_to(it, "<line class=\"axis\" x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{2:.0f}\" y2=\"{1:.0f}\"/>\n", kLeft,
                 bottom, kLeft + kPlotWidth);
  const double first = std::ceil(start_ms / step_ms - 1e-9);
  for (int i = 0; (first + i) * step_ms <= end_ms * (1 + 1e-9); ++i) {
    const double tick_ms = (first + i) * step_ms;
    const double x = layout.x(tick_ms / 1e3);
    fmt::format_to(it, "<line class=\"grid\" x1=\"{0:.2f}\" y1=\"{1:.0f}\" x2=\"{0:.2f}\" y2=\"{2:.0f}\"/>\n", x,
                   top - 4, bottom + 4);
    fmt::format_to(it, "<text class=\"tick\" x=\"{:.2f}\" y=\"{:.0f}\">{:.{}f}</text>\n", x, bottom + 18, tick_ms,
                   decimals);
  }
  fmt::format_to(it, "<text class=\"key\" x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">time (ms)</text>\n",
                 kLeft + kPlotWidth, bottom + 34);
}

bool in_window(const Layout& layout, double start_s, double end_s) {
  return end_s >= layout.start_s && start_s <= layout.end_s;
}

// A bar's left edge and width in pixels, cut to the window (at least half a
// pixel, so instantaneous actions stay visible).
std::pair<double, double> bar_extent(const Layout& layout, double start_s, double end_s) {
  const double left = std::max(layout.x(start_s), kLeft);
  const double right = std::min(layout.x(end_s), kLeft + kPlotWidth);
  return {left, std::max(right - left, 0.5)};
}

void write_computes(std::string& out, const Layout& layout, double top, const Timeline& timeline) {
  auto it = std::back_inserter(out);
  std::size_t shown = 0;
  for (const ComputeRecord& record : timeline.computes) shown += in_window(layout, record.start_s, record.end_s);
  const bool labels = shown <= kSvgMaxLabelledActions;
  for (const ComputeRecord& record : timeline.computes) {
    if (!in_window(layout, record.start_s, record.end_s)) continue;
    const auto [x, width] = bar_extent(layout, record.start_s, record.end_s);
    const double y = top + record.rank * kRowPitch;
    fmt::format_to(it,
                   "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\">"
                   "<title>rank {}: {}, {:.3f} ms to {:.3f} ms</title></rect>\n",
                   style_of(record.action.kind).letter, x, y, width, kRowHeight, record.rank,
                   to_string(record.action), record.start_s * 1e3, record.end_s * 1e3);
    const std::string number = std::to_string(record.action.microbatch);
    if (labels && width >= kDigitWidth * static_cast<double>(number.size())) {
      fmt::format_to(it, "<text class=\"mb\" x=\"{:.2f}\" y=\"{:.1f}\">{}</text>\n", x + width / 2,
                     y + kRowHeight / 2 + 4, number);
    }
  }
}

// Blocking SEND/RECV time as a thin bar through the middle of the lane.
void write_waits(std::string& out, const Layout& layout, double top, const Timeline& timeline) {
  auto it = std::back_inserter(out);
  for (const CommWaitRecord& record : timeline.comm_waits) {
    if (!in_window(layout, record.start_s, record.end_s)) continue;
    const auto [x, width] = bar_extent(layout, record.start_s, record.end_s);
    fmt::format_to(it,
                   "<rect class=\"wait\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"6\">"
                   "<title>rank {}: wait {}, {:.3f} ms to {:.3f} ms</title></rect>\n",
                   x, top + record.rank * kRowPitch + kRowHeight / 2 - 3, width, record.rank, to_string(record.action), record.start_s * 1e3, record.end_s * 1e3);
  }
}

// Swatches carry an inline fill and no kind class, so counting bars by
// class counts compute actions only.
// RECOMPUTE's swatch only where some panel recomputes apart.
void write_legend(std::string& out, double y, bool waits, bool recomputes) {
  auto it = std::back_inserter(out);
  double x = kLeft;
  auto entry = [&](std::string_view fill, std::string_view text) {
    fmt::format_to(it, "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n", x, y, fill);
    fmt::format_to(it, "<text class=\"key\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", x + 20, y + 12, text);
    x += 40 + 8 * static_cast<double>(text.size());
  };
  for (const KindStyle& kind : kKinds) {
    if (&kind == &style_of(OpKind::kRecompute) && !recomputes) continue;
    entry(kind.fill, fmt::format("{} {}", kind.letter, kind.name));
  }
  if (waits) entry(kWaitFill, "comm wait");
}

}  // namespace

GanttWindow parse_gantt_window(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw InputError(fmt::format("--window '{}': give START:END as times ('20ms:80ms') or as shares of the "
                                 "timeline ('0%:25%')",
                                 text));
  }
  const std::string_view start = text.substr(0, colon), end = text.substr(colon + 1);
  const bool percent_start = start.ends_with('%'), percent_end = end.ends_with('%');
  if (percent_start != percent_end) throw InputError("--window: give both ends as times or both as percentages");
  GanttWindow window;
  window.fraction = percent_start;
  if (window.fraction) {
    window.start = parse_non_negative(start.substr(0, start.size() - 1), "--window") / 100;
    window.end = parse_non_negative(end.substr(0, end.size() - 1), "--window") / 100;
  } else {
    window.start = parse_duration_s(start, "--window", 1e-3);
    window.end = parse_duration_s(end, "--window", 1e-3);
  }
  if (window.end <= window.start) throw InputError(fmt::format("--window '{}': END must come after START", text));
  return window;
}

std::string svg_gantt(const SimulationReport& report, const GanttWindow& window) {
  return svg_gantt_panels({{&report, ""}}, window);
}

std::string svg_gantt_panels(const std::vector<GanttPanel>& panels, const GanttWindow& window) {
  if (panels.empty()) throw InputError("a Gantt chart needs at least one simulated schedule");
  std::size_t actions = 0;
  bool waits = false, recomputes = false;
  for (const GanttPanel& panel : panels) {
    if (!panel.report->timeline) {
      throw InputError("the report has no timeline; simulate with record_timeline to draw a chart");
    }
    actions += panel.report->timeline->computes.size();
    waits = waits || !panel.report->timeline->comm_waits.empty();
    recomputes = recomputes || panel.report->recompute_actions > 0;
  }
  const Layout layout = layout_of(panels, window);
  std::string out;
  out.reserve(4096 + actions * 160);
  write_header(out, layout);
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const SimulationReport& report = *panels[i].report;
    const double top = layout.tops[i], bottom = top + report.ranks * kRowPitch;
    write_title(out, top, panels[i].title.empty() ? default_title(report) : panels[i].title);
    write_lanes(out, top, report.ranks);
    write_axis(out, layout, top, bottom);
    write_computes(out, layout, top, *report.timeline);
    write_waits(out, layout, top, *report.timeline);
  }
  write_legend(out, layout.height - 30, waits, recomputes);
  out += "</svg>\n";
  return out;
}

}  // namespace pipeplan::sim
