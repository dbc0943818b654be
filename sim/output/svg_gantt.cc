#include "sim/output/svg_gantt.h"

#include "common/xml_escape.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string_view>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

constexpr double kPlotWidth = 1200;
constexpr double kLeft = 90;  // room for "rank NN"
constexpr double kRight = 30;
constexpr double kTop = 48;   // room for the title
constexpr double kRowHeight = 26;
constexpr double kRowPitch = 34;
constexpr double kDigitWidth = 14;  // px a label digit needs to stay legible

struct KindStyle {
  std::string_view letter;
  std::string_view name;
  std::string_view fill;
};

// Indexed by OpKind; mid-light fills so dark label text stays readable.
constexpr std::array<KindStyle, 4> kKinds{{
    {"F", "forward", "#7aa6dc"},
    {"B", "backward", "#6cbf6c"},
    {"I", "backward input", "#b9e4b0"},
    {"W", "backward weight", "#f6c15b"},
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

struct Layout {
  int ranks = 0;
  double end_s = 0;  // right edge of the plot
  double plot_bottom() const { return kTop + ranks * kRowPitch; }
  double width() const { return kLeft + kPlotWidth + kRight; }
  double height() const { return plot_bottom() + 80; }
  double x(double time_s) const { return kLeft + time_s / end_s * kPlotWidth; }
  double row_y(int rank) const { return kTop + rank * kRowPitch; }
};

Layout layout_of(const SimulationReport& report) {
  double end_s = report.makespan_s;
  for (const ComputeRecord& record : report.timeline->computes) end_s = std::max(end_s, record.end_s);
  for (const CommWaitRecord& record : report.timeline->comm_waits) end_s = std::max(end_s, record.end_s);
  return {report.ranks, end_s > 0 ? end_s : 1e-3};
}

void write_header(std::string& out, const Layout& layout, const SimulationReport& report) {
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
                 "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\">\n<style>\n",
                 layout.width(), layout.height());
  for (const KindStyle& kind : kKinds) fmt::format_to(it, ".{}{{fill:{}}}\n", kind.letter, kind.fill);
  fmt::format_to(it,
                 ".wait{{fill:{}}}\n.lane{{fill:#f4f4f4}}\n.grid{{stroke:#d0d0d0;stroke-width:1}}\n"
                 ".axis{{stroke:#333;stroke-width:1}}\n.mb{{font-size:11px;fill:#1a1a1a;text-anchor:middle;"
                 "pointer-events:none}}\n.rank{{font-size:13px;text-anchor:end}}\n"
                 ".tick{{font-size:11px;text-anchor:middle}}\n.key{{font-size:12px}}\n"
                 ".title{{font-size:15px;font-weight:bold}}\n</style>\n"
                 "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                 kWaitFill);
  fmt::format_to(it, "<text class=\"title\" x=\"{:.0f}\" y=\"28\">{}</text>\n", kLeft,
                 escape_xml(fmt::format("{} | p={} m={} v={} | makespan {:.3f} ms | bubble {:.1f}%", report.schedule,
                                        report.ranks, report.microbatches, report.virtual_stages,
                                        report.makespan_s * 1e3, report.bubble_rate * 100)));
}

void write_lanes(std::string& out, const Layout& layout) {
  auto it = std::back_inserter(out);
  for (int rank = 0; rank < layout.ranks; ++rank) {
    const double y = layout.row_y(rank);
    fmt::format_to(it, "<rect class=\"lane\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\"/>\n",
                   kLeft, y, kPlotWidth, kRowHeight);
    fmt::format_to(it, "<text class=\"rank\" x=\"{:.0f}\" y=\"{:.1f}\">rank {}</text>\n", kLeft - 10,
                   y + kRowHeight / 2 + 4, rank);
  }
}

// Grid lines and labels at 1-2-5 steps in milliseconds.
void write_axis(std::string& out, const Layout& layout) {
  auto it = std::back_inserter(out);
  const double range_ms = layout.end_s * 1e3;
  const double step_ms = nice_step(range_ms);
  const int decimals = decimals_for(step_ms);
  const double bottom = layout.plot_bottom();
  fmt::format_to(it, "<line class=\"axis\" x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{2:.0f}\" y2=\"{1:.0f}\"/>\n", kLeft,
                 bottom, kLeft + kPlotWidth);
  for (int i = 0; i * step_ms <= range_ms * (1 + 1e-9); ++i) {
    const double x = layout.x(i * step_ms / 1e3);
    fmt::format_to(it, "<line class=\"grid\" x1=\"{0:.2f}\" y1=\"{1:.0f}\" x2=\"{0:.2f}\" y2=\"{2:.0f}\"/>\n", x,
                   kTop - 4, bottom + 4);
    fmt::format_to(it, "<text class=\"tick\" x=\"{:.2f}\" y=\"{:.0f}\">{:.{}f}</text>\n", x, bottom + 18,
                   i * step_ms, decimals);
  }
  fmt::format_to(it, "<text class=\"key\" x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">time (ms)</text>\n",
                 kLeft + kPlotWidth, bottom + 34);
}

void write_computes(std::string& out, const Layout& layout, const Timeline& timeline) {
  auto it = std::back_inserter(out);
  const bool labels = timeline.computes.size() <= kSvgMaxLabelledActions;
  for (const ComputeRecord& record : timeline.computes) {
    const double x = layout.x(record.start_s);
    const double width = std::max(layout.x(record.end_s) - x, 0.5);
    const double y = layout.row_y(record.rank);
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
void write_waits(std::string& out, const Layout& layout, const Timeline& timeline) {
  auto it = std::back_inserter(out);
  for (const CommWaitRecord& record : timeline.comm_waits) {
    const double x = layout.x(record.start_s);
    fmt::format_to(it,
                   "<rect class=\"wait\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"6\">"
                   "<title>rank {}: wait {}, {:.3f} ms to {:.3f} ms</title></rect>\n",
                   x, layout.row_y(record.rank) + kRowHeight / 2 - 3, std::max(layout.x(record.end_s) - x, 0.5),
                   record.rank, to_string(record.action), record.start_s * 1e3, record.end_s * 1e3);
  }
}

// Swatches carry an inline fill and no kind class, so counting bars by
// class counts compute actions only.
void write_legend(std::string& out, const Layout& layout, bool waits) {
  auto it = std::back_inserter(out);
  const double y = layout.plot_bottom() + 50;
  double x = kLeft;
  auto entry = [&](std::string_view fill, std::string_view text) {
    fmt::format_to(it, "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n", x, y, fill);
    fmt::format_to(it, "<text class=\"key\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", x + 20, y + 12, text);
    x += 40 + 8 * static_cast<double>(text.size());
  };
  for (const KindStyle& kind : kKinds) entry(kind.fill, fmt::format("{} {}", kind.letter, kind.name));
  if (waits) entry(kWaitFill, "comm wait");
}

}  // namespace

std::string svg_gantt(const SimulationReport& report) {
  if (!report.timeline) {
    throw InputError("the report has no timeline; simulate with record_timeline to draw a chart");
  }
  const Timeline& timeline = *report.timeline;
  const Layout layout = layout_of(report);
  std::string out;
  out.reserve(4096 + timeline.computes.size() * 160);
  write_header(out, layout, report);
  write_lanes(out, layout);
  write_axis(out, layout);
  write_computes(out, layout, timeline);
  write_waits(out, layout, timeline);
  write_legend(out, layout, !timeline.comm_waits.empty());
  out += "</svg>\n";
  return out;
}

}  // namespace pipeplan::sim
