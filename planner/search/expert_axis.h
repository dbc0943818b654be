// The plan search's expert-parallel axis (mixture-of-experts models): the
// (ep, etp) layouts each group of t x c x d ranks folds into, under
// Megatron's MoE parallel folding (models/expert_parallel.h).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "planner/plan.h"

namespace pipeplan::planner {

// The reasons expert_layouts counts.
inline constexpr const char* kEpNotFolding = "ep x etp does not divide t x c x d";
inline constexpr const char* kEtpNotDividing = "expert tensor parallel does not divide t";
inline constexpr const char* kEpWithoutSequenceParallel = "expert parallelism without sequence parallelism";
inline constexpr const char* kDeepEpOffNodeWithoutRdma = "DeepEP across nodes without RDMA";

struct ExpertLayout {
  int ep = 1;
  int etp = 0;  // 0: as t (a dense model's only layout)
};

// Throws InputError for fixed expert choices no group can take: --ep,
// --etp or a routing option on a dense model, an ep not dividing the
// experts, sizes below 1, a load imbalance below 1, a negative capacity
// factor, DeepEP with --ep 1 or on hardware that cannot run it (a node
// without NVLink, a fixed ep leaving the node without RDMA). (DeepEP applies to the candidates with ep > 1,
// the all-to-all overlap to Interleaved1F1B's.)
void check_fixed_experts(const PlanRequest& request);

// The layouts of t x c x d ranks: a dense model's one; for experts every ep
// that divides them and t x c x d / etp, with etp 1 or t (or the fixed
// ones). Without sequence parallelism on t > 1, only ep 1 with etp t
// (the all-to-all dispatcher needs it); with DeepEP and no RDMA, only the
// expert-parallel groups within a node. What is left out is counted in
// `rejected` by reason.
std::vector<ExpertLayout> expert_layouts(const PlanRequest& request, int t, int c, int d,
                                         std::map<std::string, std::size_t>& rejected);

}  // namespace pipeplan::planner
