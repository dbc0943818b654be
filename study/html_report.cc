#include "study/html_report.h"

#include <fmt/format.h>

#include "common/xml_escape.h"

namespace pipeplan::study {
namespace {

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::string html = "<table>\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    html += "<tr>";
    for (const std::string& cell : rows[r]) html += fmt::format("<{0}>{1}</{0}>", r == 0 ? "th" : "td", escape_xml(cell));
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

// Inline SVG drops its XML declaration, which HTML does not allow mid-page.
std::string inline_svg(const std::string& svg) {
  const auto start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

constexpr std::string_view kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; }
.question { font-size: 1.05em; color: #444; }
.plot { margin: 1em 0; } .plot svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; } th, td { border: 1px solid #ccc; padding: 3px 6px; }
th { background: #f2f2f2; } td { text-align: right; }
)";

}  // namespace

std::string report_html(const StudyFile& study, const std::vector<std::vector<std::string>>& results,
                        const std::vector<std::pair<std::string, std::string>>& plots) {
  const std::string title = study.title.empty() ? study.path : study.title;
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n"
      "</head>\n<body>\n<h1>{}</h1>\n<p class=\"question\">{}</p>\n",
      escape_xml(title), kStyle, escape_xml(title), escape_xml(study.question));
  for (const auto& [plot_title, svg] : plots) {
    html += fmt::format("<h2>{}</h2>\n<div class=\"plot\">{}</div>\n", escape_xml(plot_title), inline_svg(svg));
  }
  html += "<h2>Results</h2>\n" + table(results) + "</body>\n</html>\n";
  return html;
}

}  // namespace pipeplan::study
