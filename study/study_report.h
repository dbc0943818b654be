// What a study leaves in its output folder: results.csv (a row per point:
// swept values and every metric), results.json, one SVG per plot,
// report.md (the question, the table, the best point per series) and
// report.html (one self-contained page with the tables and plots).
#pragma once

#include <string>
#include <vector>

#include "study/runner.h"
#include "study/study_file.h"

namespace pipeplan::study {

std::string results_csv(const StudyFile& study, const std::vector<PointOutcome>& outcomes);
std::string results_json(const StudyFile& study, const std::vector<PointOutcome>& outcomes);
std::string report_markdown(const StudyFile& study, const std::vector<PointOutcome>& outcomes,
                            const std::vector<std::string>& plot_files);

// Writes every output into `out_dir`; returns the files written. Throws
// InputError when a file cannot be written.
std::vector<std::string> write_study_outputs(const StudyFile& study, const std::vector<PointOutcome>& outcomes,
                                             const std::string& out_dir);

}  // namespace pipeplan::study
