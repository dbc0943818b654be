#include "validate/searched_order_share.h"

#include <stdexcept>

#include "sim/lowering.h"

namespace pipeplan::validate {

std::vector<double> pack_order(const sim::Schedule& order) {
  std::vector<double> values;
  for (const std::vector<sim::Action>& actions : order.actions) {
    values.push_back(static_cast<double>(actions.size()));
    for (const sim::Action& action : actions) {
      values.insert(values.end(), {static_cast<double>(action.stage), static_cast<double>(action.microbatch),
                                   static_cast<double>(action.kind), action.overlapped ? 1.0 : 0.0});
    }
  }
  return values;
}

sim::Schedule unpack_order(const std::vector<double>& values, sim::Schedule shape) {
  shape.actions.assign(static_cast<std::size_t>(shape.ranks), {});
  std::size_t at = 0;
  const auto next = [&]() {
    if (at >= values.size()) throw std::logic_error("a shared order ends before its ranks' actions");
    return static_cast<int>(values[at++]);
  };
  for (std::vector<sim::Action>& actions : shape.actions) {
    const int count = next();
    for (int i = 0; i < count; ++i) {
      sim::Action action;
      action.stage = next();
      action.microbatch = next();
      action.kind = static_cast<sim::OpKind>(next());
      action.overlapped = next() != 0;
      actions.push_back(action);
    }
  }
  if (at != values.size()) throw std::logic_error("a shared order has more values than its ranks' actions");
  return shape;
}

void share_searched_order(ValidationPlan& plan, const step::ModelSimulation* predicted, Transport& transport) {
  std::vector<double> values;
  if (transport.rank() == 0) {
    if (predicted == nullptr) throw std::logic_error("rank 0 shares the order its prediction replayed");
    values = pack_order(predicted->schedule);
  }
  const sim::Schedule order = unpack_order(transport.broadcast(values), plan.lowered);
  plan.lowered = sim::lower_communication(order, sim::RecvPlacement::kBeforeUse);
}

}  // namespace pipeplan::validate
