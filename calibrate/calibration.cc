#include "calibrate/calibration.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

// The wrapper first, before any other Eigen header.
// clang-format off
#include "common/eigen_core.h"

#include <Eigen/Dense>
#include <unsupported/Eigen/LevenbergMarquardt>
// clang-format on

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/units.h"
#include "models/layers.h"

namespace pipeplan::calibrate {
namespace {

// A run ready to simulate: its model expanded once, its layout as a setup.
struct PreparedRun {
  const MeasuredRun* run = nullptr;
  models::ModelLayers layers;
  step::PipelineSetup setup;
};

std::string run_label(const MeasuredRun& run) { return fmt::format("{}: run '{}'", run.place, run.name); }

PreparedRun prepare(const MeasuredRun& run) {
  try {
    const models::ModelConfig model = models::load_model(run.model);
    step::PipelineSetup setup = run_setup(run, model);
    return {&run, models::expand_layers(model, setup.shape), setup};
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}: {}", run_label(run), error.what()));
  }
}

step::ModelSimulation simulate(const PreparedRun& prepared, const models::HardwareConfig& hardware) {
  sim::SimulationOptions options;
  options.compute_critical_path = false;
  try {
    return step::simulate_model(prepared.layers, hardware, prepared.setup, options);
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}: {}", run_label(*prepared.run), error.what()));
  }
}

// What the run measured: the whole step, or the pipeline alone (validate).
double predicted_step_s(const MeasuredRun& run, const step::ModelSimulation& result) {
  return run.pipeline_only ? result.pipeline_s : result.iteration_time_s;
}

RunPrediction prediction(const PreparedRun& prepared, const models::HardwareConfig& hardware) {
  const step::ModelSimulation result = simulate(prepared, hardware);
  RunPrediction row;
  row.run = *prepared.run;
  row.predicted_s = predicted_step_s(row.run, result);
  row.error = (row.predicted_s - row.run.step_time_s) / row.run.step_time_s;
  row.predicted_mfu = result.mfu;
  row.predicted_peak_bytes = result.peak_memory_bytes();
  row.fits_memory = row.predicted_peak_bytes <= result.report.memory_limit_bytes;
  return row;
}

// Unbounded coordinates for the solver: u = logit of the parameter's place
// in its range, so that every step stays inside it.
double to_free(double value, const FreeParameter& p) {
  const double width = p.upper - p.lower;
  const double share = std::clamp((value - p.lower) / width, 1e-9, 1 - 1e-9);
  return std::log(share / (1 - share));
}

double from_free(double u, const FreeParameter& p) { return p.lower + (p.upper - p.lower) / (1 + std::exp(-u)); }

// The relative step-time errors of the fitted runs at given parameters.
class Residuals {
 public:
  Residuals(const std::vector<PreparedRun>& runs, const models::HardwareConfig& base,
            const std::vector<FreeParameter>& fit)
      : runs_(&runs), base_(&base), fit_(&fit) {}

  models::HardwareConfig hardware_at(const Eigen::VectorXd& values) const {
    models::HardwareConfig hardware = *base_;
    for (std::size_t j = 0; j < fit_->size(); ++j) (*fit_)[j].field(hardware) = values(static_cast<Eigen::Index>(j));
    return hardware;
  }

  Eigen::VectorXd at(const Eigen::VectorXd& values) const {
    const models::HardwareConfig hardware = hardware_at(values);
    Eigen::VectorXd errors(static_cast<Eigen::Index>(runs_->size()));
    for (std::size_t i = 0; i < runs_->size(); ++i) {
      const PreparedRun& run = (*runs_)[i];
      errors(static_cast<Eigen::Index>(i)) =
          predicted_step_s(*run.run, simulate(run, hardware)) / run.run->step_time_s - 1;
    }
    ++evaluations_;
    return errors;
  }

  Eigen::VectorXd values_of(const Eigen::VectorXd& free) const {
    Eigen::VectorXd values(free.size());
    for (Eigen::Index j = 0; j < free.size(); ++j) values(j) = from_free(free(j), (*fit_)[static_cast<std::size_t>(j)]);
    return values;
  }

  int runs() const { return static_cast<int>(runs_->size()); }
  int evaluations() const { return evaluations_; }

 private:
  const std::vector<PreparedRun>* runs_;
  const models::HardwareConfig* base_;
  const std::vector<FreeParameter>* fit_;
  mutable int evaluations_ = 0;
};

// d(errors_i)/d(x_j) by central differences of `errors_at`, x_j moved by
// steps(j) each way.
template <typename ErrorsAt>
Eigen::MatrixXd central_differences(const ErrorsAt& errors_at, const Eigen::VectorXd& x, const Eigen::VectorXd& steps,
                                    Eigen::Index runs) {
  Eigen::MatrixXd result(runs, x.size());
  for (Eigen::Index j = 0; j < x.size(); ++j) {
    Eigen::VectorXd up = x, down = x;
    up(j) += steps(j);
    down(j) -= steps(j);
    result.col(j) = (errors_at(up) - errors_at(down)) / (2 * steps(j));
  }
  return result;
}

// Eigen's solver interface over the free coordinates.
struct SolverFunctor : Eigen::DenseFunctor<double> {
  SolverFunctor(const Residuals& residuals, int parameters)
      : Eigen::DenseFunctor<double>(parameters, residuals.runs()), residuals_(&residuals) {}
  int operator()(const Eigen::VectorXd& free, Eigen::VectorXd& errors) const {
    errors = residuals_->at(residuals_->values_of(free));
    return 0;
  }
  // Steps a ten-thousandth of a unit in the solver's coordinates: wide
  // enough that a step moves every step time well above rounding, narrow
  // against the curvature of a logit.
  int df(const Eigen::VectorXd& free, Eigen::MatrixXd& jacobian) const {
    const auto errors_at = [this](const Eigen::VectorXd& x) { return residuals_->at(residuals_->values_of(x)); };
    jacobian = central_differences(errors_at, free, Eigen::VectorXd::Constant(free.size(), 1e-4), residuals_->runs());
    return 0;
  }
  const Residuals* residuals_;
};

// The size of a change that matters for each parameter: its value, or a
// thousandth of its range for a value at or near zero (a fixed cost of 0 s).
Eigen::VectorXd scales(const Eigen::VectorXd& values, const std::vector<FreeParameter>& fit) {
  Eigen::VectorXd result(values.size());
  for (Eigen::Index j = 0; j < values.size(); ++j) {
    const FreeParameter& parameter = fit[static_cast<std::size_t>(j)];
    result(j) = std::max(std::abs(values(j)), 1e-3 * (parameter.upper - parameter.lower));
  }
  return result;
}

// d(error_i)/d(value_j) in the parameters' own units, steps a millionth of
// each one's scale.
Eigen::MatrixXd jacobian(const Residuals& residuals, const Eigen::VectorXd& values, const Eigen::VectorXd& scale) {
  const auto errors_at = [&residuals](const Eigen::VectorXd& x) { return residuals.at(x); };
  return central_differences(errors_at, values, 1e-6 * scale, residuals.runs());
}

std::vector<std::string> names_of(const std::vector<FreeParameter>& fit) {
  std::vector<std::string> names;
  for (const FreeParameter& parameter : fit) names.emplace_back(parameter.name);
  return names;
}

// The runs must tell the parameters apart: on relative changes of each
// (the Jacobian's columns times the values), no combination of them may
// leave every run's step time nearly unchanged. A condition number above
// kMaxCondition means some combination is fixed by the runs a thousand
// times more weakly than another, so its fitted values would be noise.
void check_distinguishable(const Eigen::MatrixXd& jacobian, const Eigen::VectorXd& scale,
                           const std::vector<FreeParameter>& fit) {
  constexpr double kMaxCondition = 1e3;
  if (fit.size() < 2) return;
  const Eigen::MatrixXd relative = jacobian * scale.asDiagonal();
  const Eigen::VectorXd singular = Eigen::JacobiSVD<Eigen::MatrixXd>(relative).singularValues();
  if (singular.minCoeff() * kMaxCondition < singular.maxCoeff()) {
    throw InputError(fmt::format("--fit: the runs cannot tell {} apart (condition number {:.3g}: their effects on "
                                 "the runs' step times are nearly proportional); fit fewer parameters or add runs "
                                 "of other shapes (models, sequence lengths, tensor-parallel sizes)",
                                 fmt::join(names_of(fit), ", "), singular.maxCoeff() / singular.minCoeff()));
  }
}

}  // namespace

std::vector<bool> holdout_mask(int total, int count) {
  std::vector<bool> mask(static_cast<std::size_t>(total), false);
  for (int j = 0; j < count; ++j) {
    mask[static_cast<std::size_t>(std::min(total - 1, (2 * j + 1) * total / (2 * count)))] = true;
  }
  return mask;
}

ErrorSummary summarise(const std::vector<RunPrediction>& rows, bool held_out) {
  ErrorSummary summary;
  for (const RunPrediction& row : rows) {
    if (row.held_out != held_out) continue;
    ++summary.runs;
    summary.mean_abs += std::abs(row.error);
    summary.max_abs = std::max(summary.max_abs, std::abs(row.error));
  }
  if (summary.runs > 0) summary.mean_abs /= summary.runs;
  return summary;
}

std::vector<RunPrediction> predict_runs(const std::vector<MeasuredRun>& runs, const models::HardwareConfig* hardware) {
  std::vector<RunPrediction> rows;
  for (const MeasuredRun& run : runs) {
    const PreparedRun prepared = prepare(run);
    if (hardware != nullptr) {
      rows.push_back(prediction(prepared, *hardware));
      continue;
    }
    try {
      rows.push_back(prediction(prepared, models::load_hardware(run.hardware)));
    } catch (const InputError& error) {
      throw InputError(fmt::format("{}: {}", run_label(run), error.what()));
    }
  }
  return rows;
}

Calibration calibrate(const std::vector<MeasuredRun>& runs, const CalibrationOptions& options) {
  if (options.fit.empty()) throw InputError("--fit: name at least one parameter to fit");
  for (const MeasuredRun& run : runs) {
    if (run.hardware != runs.front().hardware) {
      throw InputError(fmt::format("{}: names hardware '{}' where {} names '{}': a calibration fits one hardware "
                                   "description; split the runs by hardware",
                                   run_label(run), run.hardware, runs.front().place, runs.front().hardware));
    }
  }
  const int total = static_cast<int>(runs.size());
  const int parameters = static_cast<int>(options.fit.size());
  if (options.holdout < 0 || options.holdout >= total) {
    throw InputError(fmt::format("--holdout {}: leave out 0 to {} of the {} runs", options.holdout, total - 1, total));
  }
  if (total - options.holdout < parameters) {
    throw InputError(fmt::format(
        "{} to fit {} ({}): give at least as many runs as parameters, or fit "
        "fewer (--fit){}",
        format_plural(total - options.holdout, "run"), format_plural(parameters, "parameter"),
        fmt::join(names_of(options.fit), ", "), options.holdout > 0 ? " or hold out fewer (--holdout)" : ""));
  }
  Calibration result;
  result.base = runs.front().hardware;
  models::HardwareConfig base;
  try {
    base = models::load_hardware(result.base);
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}: {}", run_label(runs.front()), error.what()));
  }

  const std::vector<bool> held = holdout_mask(total, options.holdout);
  std::vector<PreparedRun> all, fitted;
  for (const MeasuredRun& run : runs) all.push_back(prepare(run));
  for (int i = 0; i < total; ++i) {
    if (!held[static_cast<std::size_t>(i)]) fitted.push_back(all[static_cast<std::size_t>(i)]);
  }

  const Residuals residuals(fitted, base, options.fit);
  Eigen::VectorXd initial(parameters), free(parameters);
  for (int j = 0; j < parameters; ++j) {
    const FreeParameter& parameter = options.fit[static_cast<std::size_t>(j)];
    initial(j) = parameter.field(base);
    // Started a hundredth of its range inside a bound it sits on: there the
    // solver's coordinates are flat and it could not move off.
    const double inset = 1e-2 * (parameter.upper - parameter.lower);
    free(j) = to_free(std::clamp(initial(j), parameter.lower + inset, parameter.upper - inset), parameter);
  }
  // Each parameter must move some run's prediction, and the runs must tell
  // the parameters apart, or the fit would be arbitrary.
  Eigen::VectorXd start = residuals.values_of(free);
  Eigen::VectorXd start_scale = scales(start, options.fit);
  Eigen::MatrixXd start_jacobian = jacobian(residuals, start, start_scale);
  // A threshold (runtime.moe_layer_host binds only above the GPU's time) is
  // flat below it: such a parameter starts again mid-range.
  bool restarted = false;
  for (int j = 0; j < parameters; ++j) {
    if ((start_jacobian.col(j) * start_scale(j)).norm() < 1e-9) {
      const FreeParameter& parameter = options.fit[static_cast<std::size_t>(j)];
      free(j) = to_free(0.5 * (parameter.lower + parameter.upper), parameter);
      restarted = true;
    }
  }
  if (restarted) {
    start = residuals.values_of(free);
    start_scale = scales(start, options.fit);
    start_jacobian = jacobian(residuals, start, start_scale);
  }
  for (int j = 0; j < parameters; ++j) {
    if ((start_jacobian.col(j) * start_scale(j)).norm() < 1e-9) {
      throw InputError(fmt::format("--fit: {} changes none of the runs' step times; drop it",
                                   options.fit[static_cast<std::size_t>(j)].name));
    }
  }
  check_distinguishable(start_jacobian, start_scale, options.fit);

  SolverFunctor functor(residuals, parameters);
  Eigen::LevenbergMarquardt<SolverFunctor> solver(functor);
  solver.setXtol(1e-14);
  solver.setFtol(1e-14);
  solver.setGtol(0);
  solver.setMaxfev(400 * (parameters + 1));
  // Stopping on the evaluation budget means the fit did not settle.
  result.converged = solver.minimize(free) != Eigen::LevenbergMarquardtSpace::TooManyFunctionEvaluation;

  const Eigen::VectorXd values = residuals.values_of(free);
  result.hardware = residuals.hardware_at(values);
  const Eigen::VectorXd errors = residuals.at(values);
  const int dof = static_cast<int>(fitted.size()) - parameters;
  std::optional<Eigen::MatrixXd> covariance;
  if (dof > 0) {
    const Eigen::MatrixXd j = jacobian(residuals, values, scales(values, options.fit));
    const double variance = errors.squaredNorm() / dof;
    covariance = variance * (j.transpose() * j).inverse();
  }
  for (int j = 0; j < parameters; ++j) {
    const FreeParameter& parameter = options.fit[static_cast<std::size_t>(j)];
    FittedParameter fitted_parameter{parameter, initial(j), values(j), std::nullopt, false, std::nullopt};
    if (covariance) fitted_parameter.standard_error = std::sqrt(std::max(0.0, (*covariance)(j, j)));
    const double margin = 1e-4 * (parameter.upper - parameter.lower);
    fitted_parameter.at_bound = values(j) < parameter.lower + margin || values(j) > parameter.upper - margin;
    result.parameters.push_back(fitted_parameter);
  }
  for (int i = 0; i < total; ++i) {
    RunPrediction row = prediction(all[static_cast<std::size_t>(i)], result.hardware);
    row.held_out = held[static_cast<std::size_t>(i)];
    result.rows.push_back(std::move(row));
  }
  result.fitted = summarise(result.rows, false);
  result.held_out = summarise(result.rows, true);
  result.evaluations = residuals.evaluations();
  if (options.sensitivity && result.exactly_determined() && result.converged) {
    std::vector<MeasuredRun> longer = runs;
    for (MeasuredRun& run : longer) run.step_time_s *= 1.01;
    CalibrationOptions refit = options;
    refit.sensitivity = false;
    const Calibration moved = calibrate(longer, refit);
    for (std::size_t j = 0; j < result.parameters.size(); ++j) {
      const double value = result.parameters[j].value;
      if (value != 0) result.parameters[j].sensitivity = moved.parameters[j].value / value - 1;
    }
  }
  return result;
}

}  // namespace pipeplan::calibrate
