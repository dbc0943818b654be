// Megatron's MoE parallel folding: per pipeline stage the attention's
// t x c x d ranks fold into etp x ep x (expert data-parallel) ranks for the
// expert layers. The checks and the sizes that satisfy them.
#pragma once

#include <vector>

#include "models/hardware.h"
#include "models/model_config.h"
#include "models/training_shape.h"

namespace pipeplan::models {

// Throws InputError naming the option and what would be valid: an ep,
// etp or routing option on a dense model, an ep not dividing the experts, ep x etp not
// dividing t x c x d, an etp not dividing t, expert or tensor parallelism
// across tensor-parallel ranks without sequence parallelism, ZeRO-2/3 where
// the experts have other replicas than the dense weights, a load imbalance
// below 1 or over ep (the busiest rank's share can be no more), or a
// negative capacity factor.
void check_expert_parallel(const ModelConfig& model, const TrainingShape& shape);

// A model with experts' routing: the load imbalance within 1 .. experts /
// top-k, a finite capacity factor >= 0 (0: none). Throws InputError.
void check_routing(const ModelConfig& model, double load_imbalance, double capacity_factor);

// The busiest of the ep ranks' routed tokens over the average in one
// micro-batch, for `tokens` tokens routed by the whole expert-parallel group:
// the systematic `skew` (TrainingShape::moe_load_imbalance) times the
// sampling spread of each token drawing its top-k experts at random (as
// Megatron's force-balanced routing does from random logits: balanced only
// in expectation), capped at `capacity_factor` (0: dropless). 1 for ep 1.
double busiest_rank_load(const MoeConfig& moe, int ep, double tokens, double skew, double capacity_factor);

// Why the shape's dispatcher cannot run on `hardware`, or null. DeepEP
// (deepseek-ai/DeepEP README) moves tokens over NVLink within a node and
// over RDMA (NVSHMEM on InfiniBand or RoCE) between nodes: not on a node
// without NVLink, nor across nodes (an expert-parallel group of ep ranks
// etp apart that leaves the NVLink domain) without RDMA.
const char* dispatcher_refusal(const HardwareConfig& hardware, const TrainingShape& shape);
// Throws InputError naming --moe-dispatcher, the hardware and what runs.
void check_dispatcher(const HardwareConfig& hardware, const TrainingShape& shape);

// The ep values the shape's t x c x d and etp allow for the model's experts
// (1 alone for a dense model), ascending.
std::vector<int> expert_parallel_sizes(const ModelConfig& model, const TrainingShape& shape);

}  // namespace pipeplan::models
