// A searched order (ZBAuto) depends on the costs it is searched for, and
// only rank 0 measures them: rank 0 predicts with the measured costs and
// every rank runs the order that prediction replayed, broadcast from rank 0.
#pragma once

#include <vector>

#include "sim/schedule.h"
#include "step/model_simulation.h"
#include "validate/transport.h"
#include "validate/validation_plan.h"

namespace pipeplan::validate {

// Each rank's action count, then each action as (stage, micro-batch, kind,
// overlapped); exact in doubles.
std::vector<double> pack_order(const sim::Schedule& order);
// `shape`'s ranks filled with the packed actions; throws std::logic_error
// when the values do not describe its ranks.
sim::Schedule unpack_order(const std::vector<double>& values, sim::Schedule shape);

// Rank 0 passes its prediction (the others null); on return every rank's
// plan.lowered is that order with its communication, placed as the plan's
// generated schedules are.
void share_searched_order(ValidationPlan& plan, const step::ModelSimulation* predicted, Transport& transport);

}  // namespace pipeplan::validate
