// The model zoo and the model YAML schema: every built-in model loads with
// the official sizes, user files round-trip, and bad input names the field
// (and, for files, the line).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/error.h"
#include "models/embedded_configs.h"
#include "models/layers.h"
#include "tests/support/temp_files.h"

namespace pipeplan::models {
namespace {

constexpr const char* kValid =
    "name: toy\n"                // 1
    "source: a test\n"           // 2
    "layers: 2\n"                // 3
    "hidden: 64\n"               // 4
    "ffn: 256\n"                 // 5
    "heads: 4\n"                 // 6
    "kv_heads: 2\n"              // 7
    "vocab: 512\n"               // 8
    "context: 128\n"             // 9
    "norm: rmsnorm\n"            // 10
    "mlp: swiglu\n";             // 11

using pipeplan::testing::write_temp;

// Loads `text` from a file and returns the ParseError it must raise.
ParseError parse_error_of(const std::string& text) {
  const std::string path = write_temp("pipeplan_model_error.yaml", text);
  try {
    load_model(path);
  } catch (const ParseError& error) {
    EXPECT_EQ(error.file(), path);
    return error;
  }
  ADD_FAILURE() << "no ParseError for:\n" << text;
  return ParseError("", 0, 0, "");
}

std::string replace_line(int line, const std::string& replacement) {
  std::string text = kValid;
  std::size_t start = 0;
  for (int index = 1; index < line; ++index) start = text.find('\n', start) + 1;
  const std::size_t end = text.find('\n', start);
  return text.replace(start, end - start, replacement);
}

bool mentions(const std::exception& error, const std::string& word) {
  return std::string(error.what()).find(word) != std::string::npos;
}

struct Published {
  const char* name;
  int layers, hidden, ffn, heads, kv_heads;
  std::int64_t vocab;
  int context;
};

TEST(ZooYaml, MatchesOfficialConfigs) {
  // reference.md "Models (official configs)" table.
  for (const Published& p : {Published{"llama3-8b", 32, 4096, 14336, 32, 8, 128256, 8192},
                             Published{"llama3-70b", 80, 8192, 28672, 64, 8, 128256, 8192},
                             Published{"llama3.1-405b", 126, 16384, 53248, 128, 8, 128256, 131072},
                             Published{"gpt3-175b", 96, 12288, 49152, 96, 96, 51200, 2048},
                             Published{"mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 32768}}) {
    const ModelConfig model = load_model(p.name);
    EXPECT_EQ(model.name, p.name);
    EXPECT_EQ(model.layers, p.layers) << p.name;
    EXPECT_EQ(model.hidden, p.hidden) << p.name;
    EXPECT_EQ(model.ffn, p.ffn) << p.name;
    EXPECT_EQ(model.heads, p.heads) << p.name;
    EXPECT_EQ(model.kv_heads, p.kv_heads) << p.name;
    EXPECT_EQ(model.vocab, p.vocab) << p.name;
    EXPECT_EQ(model.context, p.context) << p.name;
  }
}

TEST(ZooYaml, DeepSeekV3MoeAndLatentAttention) {
  // DeepSeek-V3 official config.json: first_k_dense_replace 3, 256 routed +
  // 1 shared experts of 2048, top-8; MLA ranks 1536 / 512, heads 128 + 64,
  // v 128; vocab 129280; 128K context (technical report Sec. 4.3).
  const ModelConfig model = load_model("deepseek-v3");
  EXPECT_EQ(model.layers, 61);
  EXPECT_EQ(model.hidden, 7168);
  EXPECT_EQ(model.ffn, 18432);
  EXPECT_EQ(model.moe.experts, 256);
  EXPECT_EQ(model.moe.shared_experts, 1);
  EXPECT_EQ(model.moe.top_k, 8);
  EXPECT_EQ(model.moe.expert_ffn, 2048);
  EXPECT_EQ(model.moe.dense_layers, 3);
  EXPECT_EQ(model.moe.router_groups, 8);       // n_group
  EXPECT_EQ(model.moe.router_group_top_k, 4);  // topk_group
  EXPECT_EQ(model.mla.q_lora_rank, 1536);
  EXPECT_EQ(model.mla.kv_lora_rank, 512);
  EXPECT_EQ(model.mla.qk_nope_head_dim, 128);
  EXPECT_EQ(model.mla.qk_rope_head_dim, 64);
  EXPECT_EQ(model.mla.v_head_dim, 128);
  EXPECT_EQ(model.vocab, 129280);
  EXPECT_EQ(model.context, 131072);
}

TEST(ZooYaml, EveryModelLoadsExpandsAndCitesItsSource) {
  const std::vector<std::string> names = zoo_model_names();
  EXPECT_EQ(names.size(), 19u);
  for (const std::string& name : names) {
    const ModelConfig model = load_model(name);
    EXPECT_EQ(model.name, name);
    EXPECT_FALSE(model.source.empty()) << name;
    TrainingShape shape;
    shape.seq_len = std::min(model.context, 4096);
    EXPECT_GT(expand_layers(model, shape).total_params, 0) << name;
  }
  int files = 0;
  for (const EmbeddedFile& file : embedded_files()) {
    if (file.kind != "models") continue;
    ++files;
    EXPECT_NE(file.text.find("\nsource: "), std::string_view::npos) << file.name;
  }
  EXPECT_EQ(files, 19);
}

TEST(ZooYaml, TinyIsSmall) {
  TrainingShape shape;
  shape.seq_len = 128;
  EXPECT_LT(expand_layers(load_model("tiny"), shape).total_params, 1'000'000);
}

TEST(ModelYaml, UserFileRoundTrip) {
  const std::string path = write_temp("pipeplan_toy_model.yaml", std::string(kValid) +
                                                                      "position_embedding: learned\n"
                                                                      "tied_embeddings: true\n"
                                                                      "dropout: true\n");
  const ModelConfig model = load_model(path);
  EXPECT_EQ(model.name, "toy");
  EXPECT_EQ(model.source, "a test");
  EXPECT_EQ(model.layers, 2);
  EXPECT_EQ(model.head_dim, 16);  // hidden / heads
  EXPECT_EQ(model.kv_heads, 2);
  EXPECT_EQ(model.norm, NormKind::kRmsNorm);
  EXPECT_EQ(model.mlp, MlpKind::kSwiglu);
  EXPECT_EQ(model.position, PositionEmbedding::kLearned);
  EXPECT_TRUE(model.tied_embeddings);
  EXPECT_TRUE(model.dropout);
  EXPECT_FALSE(model.biases);
  EXPECT_FALSE(model.moe.enabled());
}

TEST(ModelYaml, DefaultsForOptionalFields) {
  const ModelConfig model = parse_model_yaml(replace_line(7, "biases: true"), "inline");
  EXPECT_EQ(model.kv_heads, model.heads);
  EXPECT_EQ(model.position, PositionEmbedding::kRope);
  EXPECT_TRUE(model.biases);
}

TEST(ModelYaml, UnknownModelListsTheZoo) {
  try {
    load_model("llama-9000");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_TRUE(mentions(error, "llama-9000"));
    EXPECT_TRUE(mentions(error, "llama3-8b"));
    EXPECT_TRUE(mentions(error, "deepseek-v3"));
  }
}

TEST(ModelYaml, UnknownKeyListsKnownKeys) {
  const ParseError error = parse_error_of(replace_line(5, "fnn: 256"));
  EXPECT_EQ(error.line(), 5);
  EXPECT_TRUE(mentions(error, "'fnn'"));
  EXPECT_TRUE(mentions(error, "known keys"));
  EXPECT_TRUE(mentions(error, "kv_heads"));
}

TEST(ModelYaml, MissingRequiredField) {
  const ParseError error = parse_error_of(replace_line(4, "# no hidden size"));
  EXPECT_TRUE(mentions(error, "'hidden'"));
  EXPECT_TRUE(mentions(error, "missing"));
}

TEST(ModelYaml, NonPositiveSizes) {
  ParseError error = parse_error_of(replace_line(3, "layers: -4"));
  EXPECT_EQ(error.line(), 3);
  EXPECT_TRUE(mentions(error, "'layers'"));
  error = parse_error_of(replace_line(8, "vocab: 0"));
  EXPECT_EQ(error.line(), 8);
  error = parse_error_of(replace_line(5, "ffn: 2.5k"));
  EXPECT_EQ(error.line(), 5);
  EXPECT_TRUE(mentions(error, "whole number"));
}

TEST(ModelYaml, HeadsMustDivideHidden) {
  const ParseError error = parse_error_of(replace_line(6, "heads: 6"));
  EXPECT_EQ(error.line(), 6);
  EXPECT_TRUE(mentions(error, "head_dim"));
  // An explicit head_dim lifts the requirement (e.g. Gemma's 256-wide heads).
  EXPECT_EQ(parse_model_yaml(replace_line(7, "head_dim: 32"), "inline").head_dim, 32);
}

TEST(ModelYaml, KvHeadsMustDivideHeads) {
  const ParseError error = parse_error_of(replace_line(7, "kv_heads: 3"));
  EXPECT_EQ(error.line(), 7);
  EXPECT_TRUE(mentions(error, "'kv_heads'"));
}

TEST(ModelYaml, MoeTopKWithinExperts) {
  const ParseError error = parse_error_of(std::string(kValid) +
                                          "moe:\n"
                                          "  experts: 4\n"
                                          "  top_k: 5\n"  // line 14
                                          "  expert_ffn: 128\n");
  EXPECT_EQ(error.line(), 14);
  EXPECT_TRUE(mentions(error, "moe.top_k"));
}

TEST(ModelYaml, RouterGroupsComeTogetherAndDivideTheExperts) {
  const std::string moe = std::string(kValid) + "moe:\n  experts: 8\n  top_k: 2\n  expert_ffn: 128\n";
  ParseError error = parse_error_of(moe + "  router_groups: 3\n  router_group_top_k: 1\n");  // line 16
  EXPECT_EQ(error.line(), 16);
  EXPECT_TRUE(mentions(error, "must divide 'moe.experts'"));
  error = parse_error_of(moe + "  router_groups: 4\n");
  EXPECT_TRUE(mentions(error, "come together"));
  error = parse_error_of(moe + "  router_groups: 2\n  router_group_top_k: 3\n");
  EXPECT_TRUE(mentions(error, "exceeds 'moe.router_groups'"));
}

TEST(ModelYaml, UnknownEnumAndBool) {
  ParseError error = parse_error_of(replace_line(10, "norm: batchnorm"));
  EXPECT_EQ(error.line(), 10);
  EXPECT_TRUE(mentions(error, "layernorm or rmsnorm"));
  error = parse_error_of(std::string(kValid) + "dropout: maybe\n");
  EXPECT_EQ(error.line(), 12);
}

TEST(ModelYaml, SyntaxErrorCarriesPosition) {
  const ParseError error = parse_error_of(replace_line(4, "hidden: [64"));
  EXPECT_GE(error.line(), 4);
}

TEST(ModelYaml, ExpandRejectsShapesThatCannotRun) {
  const ModelConfig model = load_model("llama3-8b");  // 32 heads, 8 KV heads
  TrainingShape shape;
  shape.tp = 3;
  EXPECT_THROW(expand_layers(model, shape), InputError);
  shape.tp = 16;  // divides 32 heads but not 8 KV heads
  try {
    expand_layers(model, shape);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_TRUE(mentions(error, "key/value heads"));
  }
  shape.tp = 1;
  shape.micro_batch_size = 0;
  EXPECT_THROW(expand_layers(model, shape), InputError);
  // MLA has no KV heads: t only has to divide the 128 heads.
  shape.micro_batch_size = 1;
  shape.tp = 16;
  EXPECT_NO_THROW(expand_layers(load_model("deepseek-v3"), shape));
}

TEST(ModelYaml, RecomputeNames) {
  for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    EXPECT_EQ(parse_recompute(recompute_name(recompute)), recompute);
  }
  try {
    parse_recompute("partial");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_TRUE(mentions(error, "--recompute"));
    EXPECT_TRUE(mentions(error, "selective"));
  }
}

}  // namespace
}  // namespace pipeplan::models
