// Hugging Face config.json files read as models: the same model as the zoo
// entry where the zoo has it, parameter totals as the model cards give
// them, sliding windows bounding the context, and bad files named.
// The files in configs/hf/ are the repositories' config.json files.
#include "models/hf_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/error.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "tests/support/cli_support.h"

namespace {

using namespace pipeplan;

const std::string kHf = pipeplan::testing::kConfigs + "/hf/";

models::ModelConfig from_hub(const std::string& repository) { return models::load_model(kHf + repository + "/config.json"); }

std::int64_t total_params(const models::ModelConfig& model) {
  models::TrainingShape shape;
  shape.seq_len = 1024;
  return models::expand_layer_kinds(model, shape).total_params;
}

void expect_same_model(const models::ModelConfig& read, const models::ModelConfig& zoo) {
  EXPECT_EQ(read.layers, zoo.layers);
  EXPECT_EQ(read.hidden, zoo.hidden);
  EXPECT_EQ(read.heads, zoo.heads);
  EXPECT_EQ(read.kv_heads, zoo.kv_heads);
  EXPECT_EQ(read.head_dim, zoo.head_dim);
  EXPECT_EQ(read.vocab, zoo.vocab);
  EXPECT_EQ(read.norm, zoo.norm);
  EXPECT_EQ(read.mlp, zoo.mlp);
  EXPECT_EQ(read.position, zoo.position);
  EXPECT_EQ(read.tied_embeddings, zoo.tied_embeddings);
  EXPECT_EQ(read.biases, zoo.biases);
  EXPECT_EQ(read.dropout, zoo.dropout);
  EXPECT_EQ(read.moe.experts, zoo.moe.experts);
  EXPECT_EQ(read.moe.top_k, zoo.moe.top_k);
  EXPECT_EQ(read.moe.shared_experts, zoo.moe.shared_experts);
  EXPECT_EQ(read.moe.dense_layers, zoo.moe.dense_layers);
  EXPECT_EQ(read.moe.router_groups, zoo.moe.router_groups);
  EXPECT_EQ(read.moe.router_group_top_k, zoo.moe.router_group_top_k);
  EXPECT_EQ(read.mla.kv_lora_rank, zoo.mla.kv_lora_rank);
  EXPECT_EQ(read.mla.q_lora_rank, zoo.mla.q_lora_rank);
  if (zoo.moe.enabled()) {
    EXPECT_EQ(read.moe.expert_ffn, zoo.moe.expert_ffn);
  }
  EXPECT_EQ(total_params(read), total_params(zoo));
}

TEST(HfConfig, ZooModelsReadTheSame) {
  expect_same_model(from_hub("Meta-Llama-3-70B"), models::load_model("llama3-70b"));
  expect_same_model(from_hub("Mixtral-8x7B-v0.1"), models::load_model("mixtral-8x7b"));
  expect_same_model(from_hub("DeepSeek-V3"), models::load_model("deepseek-v3"));
  expect_same_model(from_hub("gpt2"), models::load_model("gpt2-small"));
  expect_same_model(from_hub("Qwen3-235B-A22B"), models::load_model("qwen3-235b-a22b"));
  EXPECT_EQ(from_hub("Mixtral-8x7B-v0.1").name, "Mixtral-8x7B-v0.1");  // the repository's name
}

// Totals as published: Qwen2.5-72B's model card (72.7B), Mixtral's (46.7B),
// GPT-NeoX-20B's paper (Black et al. 2022: 20,554,567,680), the Gemma
// report's Table 1 (7B: 786,825,216 embedding + 7,751,248,896 other
// parameters) and GPT-2's released checkpoint (124,439,808).
TEST(HfConfig, ParameterTotalsMatchTheModelCards) {
  const auto within = [](std::int64_t count, double published) {
    return std::abs(static_cast<double>(count) - published) <= 1e-3 * published;
  };
  EXPECT_TRUE(within(total_params(from_hub("Qwen2.5-72B")), 72.7e9)) << total_params(from_hub("Qwen2.5-72B"));
  EXPECT_TRUE(within(total_params(from_hub("Mixtral-8x7B-v0.1")), 46.7e9));
  EXPECT_TRUE(within(total_params(from_hub("gpt-neox-20b")), 20'554'567'680.0))
      << total_params(from_hub("gpt-neox-20b"));
  EXPECT_TRUE(within(total_params(from_hub("gemma-7b")), 786'825'216.0 + 7'751'248'896.0))
      << total_params(from_hub("gemma-7b"));
  EXPECT_EQ(total_params(from_hub("gpt2")), 124'439'808);
}

std::string config(const std::string& fields) {
  return R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
             "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 32000,
             "max_position_embeddings": 32768)" +
         fields + "}";
}

// Windowed attention costs what full attention does up to the window.
TEST(HfConfig, SlidingWindowBoundsTheContext) {
  EXPECT_EQ(models::parse_hf_config(config(R"(, "sliding_window": 4096)"), "m.json").context, 4096);
  EXPECT_EQ(models::parse_hf_config(config(R"(, "sliding_window": null)"), "m.json").context, 32768);
  EXPECT_EQ(
      models::parse_hf_config(config(R"(, "sliding_window": 4096, "use_sliding_window": false)"), "m.json").context,
      32768);
}

std::string error_of(const std::string& text) {
  try {
    models::parse_hf_config(text, "bad/config.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(HfConfig, BadConfigsAreNamed) {
  EXPECT_NE(error_of("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 40 96\n}").find("bad/config.json:3:"),
            std::string::npos)
      << error_of("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 40 96\n}");
  EXPECT_NE(error_of(R"({"model_type": "falcon"})").find("model_type 'falcon' is not an architecture"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 1})").find("no 'model_type'"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": 4096})").find("'num_hidden_layers' of this llama config"),
            std::string::npos);
  EXPECT_NE(error_of(config(R"(, "sliding_window": "wide")")).find("'sliding_window'"), std::string::npos);
  EXPECT_NE(error_of(config(R"(, "hidden_act": "tanh")")).find("'hidden_act'"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 64, "num_attention_heads": 4,
                        "num_hidden_layers": 4, "vocab_size": 100, "max_position_embeddings": 64,
                        "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                        "mlp_only_layers": [1]})")
                .find("'mlp_only_layers'"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("one JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": 1e999})").find("malformed JSON"), std::string::npos);
  // DeepSeek-V3's config.json with fields that contradict each other.
  std::ifstream in(kHf + "DeepSeek-V3/config.json");
  std::stringstream read;
  read << in.rdbuf();
  const std::string v3 = read.str();
  const auto with = [&](const std::string& key, const std::string& value) {
    nlohmann::json edited = nlohmann::json::parse(v3);
    if (value.empty()) {
      edited.erase(key);
    } else {
      edited[key] = nlohmann::json::parse(value);
    }
    return edited.dump();
  };
  EXPECT_EQ(error_of(v3), "");
  EXPECT_NE(error_of(with("topk_group", "9")).find("'topk_group'"), std::string::npos);
  EXPECT_NE(error_of(with("n_group", "7")).find("'n_group'"), std::string::npos);
  EXPECT_NE(error_of(with("kv_lora_rank", "")).find("'kv_lora_rank'"), std::string::npos);
}

// The plan for a config.json is the zoo entry's.
TEST(HfConfig, PlanMatchesTheZooEntry) {
  const std::string args = " --hardware h100-sxm --gpus 64 --global-batch 256 --seq 4096 --json --threads 2";
  const pipeplan::testing::CommandResult zoo = pipeplan::testing::run("plan --model mixtral-8x7b" + args);
  const pipeplan::testing::CommandResult read = pipeplan::testing::run("plan --model " + kHf + "Mixtral-8x7B-v0.1/config.json" + args);
  ASSERT_EQ(zoo.code, 0) << zoo.err;
  ASSERT_EQ(read.code, 0) << read.err;
  nlohmann::json a = nlohmann::json::parse(zoo.out)["best"], b = nlohmann::json::parse(read.out)["best"];
  for (const char* key : {"tp", "pp", "dp", "ep", "schedule", "iteration_time_s", "peak_memory_bytes"}) {
    EXPECT_EQ(a[key], b[key]) << key;
  }
}

}  // namespace
