// The study as one self-contained HTML page: no scripts, no network; the
// plots are inline SVG and the results an HTML table.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "study/study_file.h"

namespace pipeplan::study {

// `plots`: (title, SVG document) pairs; `results`: the results table, its
// header first.
std::string report_html(const StudyFile& study, const std::vector<std::vector<std::string>>& results,
                        const std::vector<std::pair<std::string, std::string>>& plots);

}  // namespace pipeplan::study
