#include "planner/frameworks/deepspeed_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "planner/frameworks/megatron_args.h"
#include "planner/frameworks/plan_refusal.h"

namespace pipeplan::planner {

FrameworkConfig deepspeed_config(const PlanCandidate& plan, int global_batch, int seq_len) {
  FrameworkConfig config;
  if (const char* reason = plan_refusal(step::Framework::kDeepSpeed, plan, seq_len)) {
    config.refusals.push_back(fmt::format("DeepSpeed v0.16 does not run {}; plan with --framework deepspeed", reason));
    return config;
  }
  // train_batch_size = micro-batch x gradient accumulation x data-parallel
  // GPUs (DeepSpeed asserts it); under its pipeline engine the accumulation
  // steps are the micro-batches a step runs.
  nlohmann::ordered_json json = {{"train_batch_size", global_batch},
                                 {"train_micro_batch_size_per_gpu", plan.micro_batch_size},
                                 {"gradient_accumulation_steps", plan.microbatches},
                                 {"bf16", {{"enabled", true}}},
                                 {"zero_optimization",
                                  {{"stage", static_cast<int>(plan.zero)}, {"overlap_comm", plan.runtime.overlap_grad_reduce}}}};
  config.text = json.dump(2) + "\n";
  if (plan.pp > 1) {
    config.notes.push_back(fmt::format(
        "pipeline: deepspeed.pipe.PipelineModule(num_stages={}, partition_method='type:transformer') "
        "(Megatron-DeepSpeed's GPTModelPipe), blocks per stage {} as planned",
        plan.pp, fmt::join(plan.split.transformer_layer_counts(), "/")));
  }
  if (plan.tp > 1) {
    config.notes.push_back(fmt::format("tensor parallelism through Megatron-DeepSpeed: --tensor-model-parallel-size {}{}",
                                       plan.tp, plan.sequence_parallel ? " --sequence-parallel" : ""));
  }
  const models::Recompute recompute = uniform_recompute(plan);
  if (recompute == models::Recompute::kFull) {
    config.notes.push_back("recomputation: every block (PipelineModule activation_checkpoint_interval=1)");
  }
  if (recompute == models::Recompute::kSelective) {
    config.notes.push_back("recomputation: the attention core (Megatron-DeepSpeed --recompute-granularity selective)");
  }
  return config;
}

}  // namespace pipeplan::planner
