// A Hugging Face `config.json` read as a model: the field names of the
// Llama, Mistral/Mixtral, Qwen2/Qwen3 (dense and MoE), DeepSeek-V2/V3,
// GPT-2, GPT-NeoX, Gemma and Phi-3 families mapped onto ModelConfig.
#pragma once

#include <string>
#include <vector>

#include "models/model_config.h"

namespace pipeplan::models {

// Throws ParseError for malformed JSON (line and column), InputError for an
// architecture it does not read or a field it cannot map (naming both).
// `source` names the file in messages and becomes the model's source; the
// model is named after the folder holding a `config.json` (the repository),
// else the file.
ModelConfig parse_hf_config(const std::string& text, const std::string& source);

// The `model_type` values parse_hf_config reads.
std::vector<std::string> hf_model_types();

}  // namespace pipeplan::models
