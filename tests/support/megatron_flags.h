// The command-line flags Megatron-LM's argument parser defines that plans
// use (megatron/training/arguments.py, Megatron-LM core_r0.14.0: the
// parallelism, MoE, MLA, optimizer, overlap, recomputation, precision and
// pipeline-layout groups), for tests that check every printed flag exists.
#pragma once

#include <set>
#include <sstream>
#include <string>

namespace pipeplan::testing {

inline const std::set<std::string>& megatron_lm_flags() {
  static const std::set<std::string> flags = {
      // _add_distributed_args
      "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
      "--sequence-parallel", "--use-tp-pp-dp-mapping", "--num-virtual-stages-per-pipeline-rank",
      "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
      "--pipeline-model-parallel-layout", "--use-distributed-optimizer", "--overlap-grad-reduce",
      "--overlap-param-gather", "--tp-comm-overlap",
      // _add_training_args, _add_data_args
      "--micro-batch-size", "--global-batch-size", "--seq-length", "--recompute-granularity", "--recompute-method",
      "--recompute-num-layers", "--recompute-modules",
      // _add_mixed_precision_args, _add_optimizer_args, _add_transformer_engine_args
      "--grad-reduce-in-bf16", "--use-precision-aware-optimizer", "--exp-avg-dtype", "--exp-avg-sq-dtype",
      "--fp8-format", "--fp8-param-gather",
      // _add_moe_args
      "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size", "--expert-model-parallel-size",
      "--expert-tensor-parallel-size", "--moe-token-dispatcher-type", "--moe-grouped-gemm", "--moe-enable-deepep",
      "--moe-router-num-groups", "--moe-router-group-topk", "--moe-shared-expert-intermediate-size",
      "--moe-layer-freq", "--moe-expert-capacity-factor", "--moe-token-drop-policy",
      "--overlap-moe-expert-parallel-comm",
      // _add_mla_args
      "--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
      "--v-head-dim",
      // _add_mtp_args
      "--mtp-num-layers"};
  return flags;
}

// The words of `arguments` that start with "--" and are not defined, up to
// a trailing "#" comment.
inline std::string undefined_megatron_flags(const std::string& arguments) {
  std::istringstream words(arguments.substr(0, arguments.find('#')));
  std::string unknown;
  for (std::string word; words >> word;) {
    if (word.rfind("--", 0) == 0 && megatron_lm_flags().count(word) == 0) unknown += word + " ";
  }
  return unknown;
}

}  // namespace pipeplan::testing
