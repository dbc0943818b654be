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

TEST(StageSplit, RejectsBadLayoutsAndCounts) {
  EXPECT_THROW(split_from_counts({18, 22, 22}, 80), InputError);             // sums to 62
  EXPECT_THROW(split_from_counts({-1, 81}, 80), InputError);                 // negative
  EXPECT_THROW(split_from_layout("Et*40|t*40", 80, 2), InputError);          // no L
  EXPECT_THROW(split_from_layout("t*40|Et*40L", 80, 2), InputError);         // E not first
  EXPECT_THROW(split_from_layout("Et*40|t*39L", 80, 2), InputError);         // 79 blocks
  EXPECT_THROW(split_from_layout("Et*40|t*40L", 80, 4), InputError);         // 2 stages, not 4
  EXPECT_THROW(split_from_layout("Et*3|(tt|)*29,m|L", 61, 32), InputError);  // MTP not modelled
  EXPECT_THROW(split_from_layout("Et*|t*40L", 40, 2), InputError);
  EXPECT_THROW(split_from_layout("Ex*40L", 40, 1), InputError);
  EXPECT_THROW(parse_layer_counts("18,x,22"), InputError);
  EXPECT_EQ(parse_layer_counts("18,22"), (std::vector<int>{18, 22}));
}

}  // namespace
}  // namespace pipeplan::step
