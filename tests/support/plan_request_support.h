// A plan request for a zoo model on built-in hardware, every axis left to
// the search: tests fix what they study on top of it.
#pragma once

#include <string>

#include "models/hardware.h"
#include "models/model_config.h"
#include "planner/search/plan_search.h"

namespace pipeplan::testing {

inline planner::PlanRequest plan_request(const std::string& model, const std::string& hardware, int gpus,
                                         int global_batch, int seq_len) {
  planner::PlanRequest request;
  request.model = models::load_model(model);
  request.hardware = models::load_hardware(hardware);
  request.gpus = gpus;
  request.global_batch = global_batch;
  request.seq_len = seq_len;
  return request;
}

}  // namespace pipeplan::testing
