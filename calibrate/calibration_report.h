// A calibration as a human report, as JSON, and as the hardware YAML it
// produces (`base:` the runs' description, the fitted values with their
// standard errors and the per-run residuals as comments).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/calibration.h"

namespace pipeplan::calibrate {

// One row per run: measured, predicted, error, MFU, whether it fits.
std::string runs_table(const std::vector<RunPrediction>& rows);
nlohmann::ordered_json runs_json(const std::vector<RunPrediction>& rows);

std::string calibration_text(const Calibration& calibration);
nlohmann::ordered_json calibration_json(const Calibration& calibration);

// `name` is the new description's; it inherits everything else from the base.
std::string calibrated_hardware_yaml(const Calibration& calibration, const std::string& name,
                                     const std::string& runs_file);

}  // namespace pipeplan::calibrate
