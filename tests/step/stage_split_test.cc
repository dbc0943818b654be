// Stage splits: Megatron's even split, per-stage counts and Megatron's
// pipeline_model_parallel_layout strings (E embedding, t block, L loss, '|'
// between stages, "x*n" and "(...)*n" repetition, commas cosmetic).
#include "step/stage_split.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace pipeplan::step {
namespace {

TEST(StageSplit, EvenSplitPutsEmbeddingFirstAndOutputLast) {
  const StageSplit split = even_split(80, 4);  // Llama 3 70B on pp = 4
  EXPECT_EQ(split.transformer_layer_counts(), (std::vector<int>{20, 20, 20, 20}));
  EXPECT_EQ(split.boundaries(), (std::vector<int>{0, 21, 41, 61, 82}));
  EXPECT_EQ(format_layout(split), "Et*20|t*20|t*20|t*20L");
  EXPECT_THROW(even_split(80, 6), InputError);
}

TEST(StageSplit, CountsAndLayoutAgree) {
  const StageSplit counts = split_from_counts({18, 22, 22, 18}, 80);
  const StageSplit layout = split_from_layout("Et*18|t*22|t*22|t*18L", 80, 4);
  EXPECT_EQ(counts, layout);
  EXPECT_EQ(format_layout(counts), "Et*18|t*22|t*22|t*18L");
  EXPECT_EQ(split_from_layout(format_layout(counts), 80, 4), counts);
}

TEST(StageSplit, ReadsMegatronRepetitionsAndSeparateEndStages) {
  // "E|(tt|)*3,L": the embedding and the loss on stages of their own.
  const StageSplit split = split_from_layout("E|(tt|)*3,L", 6, 5);
  EXPECT_EQ(split.transformer_layer_counts(), (std::vector<int>{0, 2, 2, 2, 0}));
  EXPECT_EQ(format_layout(split), "E|t*2|t*2|t*2|L");
  EXPECT_EQ(split_from_layout("Ettt|t*3L", 6, 2).transformer_layer_counts(), (std::vector<int>{3, 3}));
}

// Megatron's multi-token prediction letters (its docs' "E|t*3|(t|)*5mL"):
// run with the loss, so as many as --mtp-layers just before L or none; a
// written layout carries them.
TEST(StageSplit, MtpLayersRunWithTheLoss) {
  const StageSplit with = split_from_layout("Et*3|(t|)*5mL", 8, 7, 1);
  EXPECT_EQ(with.transformer_layer_counts(), split_from_layout("Et*3|(t|)*5L", 8, 7, 1).transformer_layer_counts());
  EXPECT_EQ(format_layout(with, 1), "Et*3|t|t|t|t|t|mL");
  EXPECT_EQ(split_from_layout(format_layout(with, 1), 8, 7, 1).transformer_layer_counts(),
            with.transformer_layer_counts());
  const auto refusal = [](std::string_view layout, int mtp) {
    try {
      split_from_layout(layout, 8, layout_stage_count(layout), mtp);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("Et*3|(t|)*5mL", 0).find("holds 1 multi-token prediction layer(s) ('m') but --mtp-layers is 0"),
            std::string::npos);
  EXPECT_NE(refusal("Et*3|(t|)*5mmL", 1).find("give --mtp-layers 2"), std::string::npos);
  // Megatron's standalone stage ("...tt|m|L") and an 'm' among the blocks.
  EXPECT_NE(refusal("Et*3|(t|)*4t|m|L", 1).find("write them just before L, in its stage"), std::string::npos);
  EXPECT_NE(refusal("Et*3|(t|)*4m|tL", 1).find("write them just before L"), std::string::npos);
}

TEST(StageSplit, RejectsBadLayoutsAndCounts) {
  EXPECT_THROW(split_from_counts({18, 22, 22}, 80), InputError);             // sums to 62
  EXPECT_THROW(split_from_counts({-1, 81}, 80), InputError);                 // negative
  EXPECT_THROW(split_from_layout("Et*40|t*40", 80, 2), InputError);          // no L
  EXPECT_THROW(split_from_layout("t*40|Et*40L", 80, 2), InputError);         // E not first
  EXPECT_THROW(split_from_layout("Et*40|t*39L", 80, 2), InputError);         // 79 blocks
  EXPECT_THROW(split_from_layout("Et*40|t*40L", 80, 4), InputError);         // 2 stages, not 4
  EXPECT_THROW(split_from_layout("Et*3|(tt|)*29,m|L", 61, 32), InputError);  // 'm' without --mtp-layers
  EXPECT_THROW(split_from_layout("Et*|t*40L", 40, 2), InputError);
  EXPECT_THROW(split_from_layout("Ex*40L", 40, 1), InputError);
  EXPECT_THROW(parse_layer_counts("18,x,22"), InputError);
  EXPECT_EQ(parse_layer_counts("18,22"), (std::vector<int>{18, 22}));
}

}  // namespace
}  // namespace pipeplan::step
