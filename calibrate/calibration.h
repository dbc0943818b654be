// Fits a hardware description's free efficiency parameters to measured
// runs (`pipeplan calibrate`): every run simulated with the time model as
// `simulate --model` does, the relative step-time errors minimised by
// Levenberg-Marquardt (Eigen) inside each parameter's physical range, with
// each fitted value's standard error and, with a holdout, the error on runs
// the fit did not see.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/free_parameters.h"
#include "calibrate/measured_runs.h"
#include "models/hardware.h"

namespace pipeplan::calibrate {

struct RunPrediction {
  MeasuredRun run;
  double predicted_s = 0;
  double error = 0;          // (predicted - measured) / measured
  double predicted_mfu = 0;
  bool fits_memory = true;   // in the model, at the hardware's usable memory
  std::int64_t predicted_peak_bytes = 0;
  bool held_out = false;     // left out of the fit
};

struct FittedParameter {
  FreeParameter parameter;
  double initial = 0;
  double value = 0;
  std::optional<double> standard_error;  // none when the runs equal the parameters
  bool at_bound = false;                 // within a part in 10^4 of its range's end
  // With as many runs as parameters (exactly determined: no residual, no
  // standard error): how far the value moves, as a fraction of itself,
  // when every measured step time is 1 % longer.
  std::optional<double> sensitivity;
  // Its standard error is over a quarter of its value: the runs hardly fix it.
  bool poorly_determined() const { return standard_error && *standard_error > 0.25 * std::abs(value); }
};

struct ErrorSummary {
  int runs = 0;
  double mean_abs = 0;
  double max_abs = 0;
};

struct Calibration {
  models::HardwareConfig hardware;  // the runs' description with the fitted values
  std::string base;                 // the runs' hardware name
  std::vector<FittedParameter> parameters;
  std::vector<RunPrediction> rows;  // every run, fitted and held out
  ErrorSummary fitted, held_out;
  int evaluations = 0;              // simulations of the runs during the fit
  bool converged = true;            // false: the solver ran out of evaluations
  // As many fitted runs as parameters: the fit meets every run exactly and
  // leaves nothing to check it by (FittedParameter::sensitivity says how
  // far a measurement's error carries).
  bool exactly_determined() const { return static_cast<std::size_t>(fitted.runs) == parameters.size(); }
};

struct CalibrationOptions {
  std::vector<FreeParameter> fit;
  int holdout = 0;  // runs left out of the fit, spread evenly over the file
  // Refit an exactly determined fit with 1 % longer step times for each
  // value's sensitivity (off for that refit itself).
  bool sensitivity = true;
};

// Predicts every run on its own hardware description, or on `hardware`
// when given (the runs must then all name one description).
std::vector<RunPrediction> predict_runs(const std::vector<MeasuredRun>& runs,
                                        const models::HardwareConfig* hardware = nullptr);

// Fits; throws InputError naming the run or option that makes it impossible
// (mixed hardware, fewer runs than parameters, a parameter no run depends on).
Calibration calibrate(const std::vector<MeasuredRun>& runs, const CalibrationOptions& options);

// The runs a holdout of `count` leaves out of `total`: evenly spread.
std::vector<bool> holdout_mask(int total, int count);

ErrorSummary summarise(const std::vector<RunPrediction>& rows, bool held_out);

}  // namespace pipeplan::calibrate
