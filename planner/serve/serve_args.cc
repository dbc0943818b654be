#include "planner/serve/serve_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>


namespace pipeplan::planner {
namespace {

// TensorRT-LLM sizes its KV cache as a share of the memory free after
// weights and buffers: the share that leaves the tightest stage the cache
// planned here.
double trtllm_kv_share(const ServeOptions& options, const ServeCandidate& plan) {
  double share = 1;
  for (const StageMemory& stage : plan.stages) {
    const double free_bytes =
        static_cast<double>(options.hardware.gpu.memory_bytes) - static_cast<double>(stage.weights + stage.workspace);
    if (free_bytes > 0) share = std::min(share, static_cast<double>(stage.kv_cache) / free_bytes);
  }
  return std::floor(std::max(0.01, share) * 100) / 100;
}

}  // namespace

std::string hugging_face_id(const models::ModelConfig& model) {
  constexpr std::string_view kHost = "huggingface.co/";
  const std::size_t at = model.source.find(kHost);
  if (at == std::string::npos) return model.name;
  const std::string_view rest = std::string_view(model.source).substr(at + kHost.size());
  const std::size_t owner = rest.find('/');
  if (owner == std::string_view::npos) return model.name;
  const std::size_t end = rest.find_first_of("/; ", owner + 1);
  return std::string(rest.substr(0, end));
}

ServeCommands serve_commands(const ServeOptions& options, const ServeCandidate& plan) {
  const std::string model = hugging_face_id(options.model);
  const sim::SchedulerLimits& limits = options.limits;
  // The share planned with: --gpu-memory-utilization, or less where the
  // GPU's usable memory capped it.
  const double share = std::floor(std::min(options.memory_utilization,
                                           static_cast<double>(options.hardware.gpu.usable_memory_bytes()) /
                                               static_cast<double>(options.hardware.gpu.memory_bytes)) *
                                  100) /
                       100;
  ServeCommands commands;
  // vLLM splits layers as even_stage_layers does; a split of its own would
  // go in VLLM_PP_LAYER_PARTITION.
  commands.vllm = fmt::format(
      "vllm serve {} --tensor-parallel-size {} --pipeline-parallel-size {}{} --max-num-batched-tokens {} "
      "--max-num-seqs {} --block-size {} --gpu-memory-utilization {:g}{}{}",
      model, plan.tp, plan.pp, plan.replicas > 1 ? fmt::format(" --data-parallel-size {}", plan.replicas) : "",
      limits.max_batch_tokens, limits.max_sequences, limits.block_tokens, share,
      options.fp8_weights ? " --quantization fp8" : "", options.fp8_kv ? " --kv-cache-dtype fp8" : "");
  commands.sglang = fmt::format(
      "python -m sglang.launch_server --model-path {} --tp-size {} --pp-size {}{} --chunked-prefill-size {} "
      "--max-running-requests {} --mem-fraction-static {:g}{}{}",
      model, plan.tp, plan.pp, plan.replicas > 1 ? fmt::format(" --dp-size {}", plan.replicas) : "",
      limits.max_batch_tokens, limits.max_sequences, share,
      options.fp8_weights ? " --quantization fp8" : "", options.fp8_kv ? " --kv-cache-dtype fp8_e4m3" : "");
  commands.trtllm = fmt::format(
      "trtllm-serve {} --tp_size {} --pp_size {} --max_batch_size {} --max_num_tokens {} "
      "--kv_cache_free_gpu_memory_fraction {:g}{}",
      model, plan.tp, plan.pp, limits.max_sequences, limits.max_batch_tokens, trtllm_kv_share(options, plan),
      options.fp8_kv ? " --kv_cache_dtype fp8" : "");
  // TensorRT-LLM takes FP8 weights from the checkpoint, not a flag.
  if (options.fp8_weights) commands.trtllm_note = "TensorRT-LLM: give it an FP8 checkpoint (TensorRT Model Optimizer's)";
  if (plan.replicas > 1) {
    commands.trtllm_note += fmt::format("{}TensorRT-LLM: one server per replica, {} behind a load balancer",
                                        commands.trtllm_note.empty() ? "" : "; ", plan.replicas);
  }
  return commands;
}

}  // namespace pipeplan::planner
