// A run `pipeplan validate` measured, as a calibration run: its
// comparison.json gives the measured iteration, the plan file it names gives
// the model, hardware and layout.
#pragma once

#include <string>

#include "calibrate/measured_runs.h"

namespace pipeplan::calibrate {

// The plan is looked for as named, then next to the comparison file and in
// the directory above it (validate writes into --out DIR beside the plan).
// Throws InputError naming the file and the field.
MeasuredRun read_validation_run(const std::string& comparison_path);

}  // namespace pipeplan::calibrate
