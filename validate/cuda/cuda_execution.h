// One rank's part of a validation run on the GPU backend (--backend cuda):
// the rank takes GPU (local rank % GPUs visible), builds its stages in bf16
// with build_cuda_layers, joins its NCCL links and runs the CPU backend's
// loop (rank_loop.h): gradient check against the CPU fp32 reference at the
// bf16 tolerance, warm-up, measured iterations. This header names no CUDA
// type: without CUDA the calls throw InputError saying so.
#pragma once

#include "models/model_config.h"
#include "models/training_shape.h"
#include "sim/schedule.h"
#include "step/stage_split.h"
#include "validate/rank_execution.h"
#include "validate/transport.h"

namespace pipeplan::validate {

// Throws InputError when this build has no CUDA or this process sees no GPU.
void require_cuda_backend();

// As execute_rank, on this rank's GPU. Refuses, with InputError, ranks
// that share a GPU and schedules whose links NCCL cannot pair in order.
RankResult execute_rank_cuda(const models::ModelConfig& model, const models::TrainingShape& shape,
                             const sim::Schedule& lowered, const step::StageSplit& split, Transport& transport,
                             const ExecutionSettings& settings);

}  // namespace pipeplan::validate
