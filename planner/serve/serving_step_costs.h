// The serving simulation's step costs (sim::ServingCosts) from the cost
// model's pipeline (models::ServingStepModel), which it must outlive.
#pragma once

#include "models/serving_costs.h"
#include "sim/serving.h"

namespace pipeplan::planner {

class ServingStepCosts : public sim::ServingCosts {
 public:
  explicit ServingStepCosts(const models::ServingStepModel& model) : model_(model) {}
  int stages() const override { return model_.stages(); }
  double stage_s(int stage, const StepLoad& load) const override { return model_.step_s(stage, load); }
  double hop_s(int boundary, const StepLoad& load) const override { return model_.hop_s(boundary, load); }
  double return_s(const StepLoad& load) const override { return model_.return_s(load); }

 private:
  const models::ServingStepModel& model_;
};

}  // namespace pipeplan::planner
