// The search's work is bounded before it starts: GPU counts and global
// batches beyond any job are refused, and micro-batches of more tokens than
// any model takes are never costed (one such candidate used to end the
// whole search with its refusal).
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/hardware.h"
#include "models/model_config.h"
#include "models/model_limits.h"
#include "planner/search/search_space.h"

namespace pipeplan::planner {
namespace {

PlanRequest llama_on_8_gpus(int global_batch) {
  PlanRequest request;
  request.model = models::load_model("llama3-8b");
  request.hardware = models::load_hardware("h100-sxm");
  request.gpus = 8;
  request.global_batch = global_batch;
  request.seq_len = 4096;
  return request;
}

TEST(SearchBounds, MicroBatchesOverTheTokenLimitAreLeftOut) {
  // 2^28 tokens over 4,096 a sequence: micro-batches of at most 2^16.
  const SearchSpace space(llama_on_8_gpus(1 << 18));
  ASSERT_FALSE(space.groups().empty());
  bool largest_kept = false;
  for (const SearchGroup& group : space.groups()) {
    EXPECT_LE(static_cast<long double>(group.micro_batch_size) * 4096, models::kMaxTokens);
    largest_kept = largest_kept || group.micro_batch_size == (1 << 16);
  }
  EXPECT_TRUE(largest_kept);
  EXPECT_GT(space.rejected().at("micro-batch of more tokens than any model takes (2^28)"), 0U);
}

TEST(SearchBounds, GpuCountsAndBatchesBeyondAnyJobAreRefused) {
  PlanRequest gpus = llama_on_8_gpus(64);
  gpus.gpus = 2'000'000'000;
  EXPECT_THROW(SearchSpace{gpus}, InputError);
  EXPECT_THROW(SearchSpace{llama_on_8_gpus(kMostGlobalBatch + 1)}, InputError);
  EXPECT_NO_THROW(SearchSpace{llama_on_8_gpus(kMostGlobalBatch)});
}

}  // namespace
}  // namespace pipeplan::planner
