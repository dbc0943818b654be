// The command lines that run a serving plan in vLLM, SGLang and
// TensorRT-LLM: the layout, the scheduler's limits and the memory share.
#pragma once

#include <string>

#include "planner/serve/serve_plan.h"

namespace pipeplan::planner {

struct ServeCommands {
  std::string vllm;
  std::string sglang;
  std::string trtllm;  // one server per replica (trtllm-serve takes no data-parallel size)
  std::string trtllm_note;  // what its command line cannot say (empty: nothing)
};

// The Hugging Face repository named in the model's source
// ("https://huggingface.co/ORG/NAME/..."), else the model's name.
std::string hugging_face_id(const models::ModelConfig& model);

ServeCommands serve_commands(const ServeOptions& options, const ServeCandidate& plan);

}  // namespace pipeplan::planner
