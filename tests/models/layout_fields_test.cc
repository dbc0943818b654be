// The table of a job layout's knobs: each field reads back what it writes,
// names are unique, and bad values are refused naming the field.
#include "models/layout_fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "common/error.h"
#include "models/training_shape.h"

namespace pipeplan::models {
namespace {

// Every field written and read into a default layout.
JobLayout round_trip(const JobLayout& layout) {
  JobLayout read;
  for (const LayoutField& field : layout_fields()) {
    const std::string text = field.write(layout);
    if (!text.empty()) field.read(text, field.key, read);
  }
  return read;
}

// A layout with every knob away from its default, and MoE routing set.
JobLayout every_knob_set() {
  JobLayout layout;
  std::tie(layout.tp, layout.cp, layout.pp, layout.dp, layout.ep, layout.etp) = std::make_tuple(4, 2, 8, 16, 8, 2);
  std::tie(layout.micro_batch_size, layout.microbatches, layout.virtual_stages) = std::make_tuple(2, 32, 2);
  layout.schedule = "Interleaved1F1B";
  layout.sequence_parallel = true;
  layout.recompute = Recompute::kSelective;
  layout.recompute_modules = kMoeActivation | kLayerNorm;
  layout.recompute_in_bubbles = true;
  layout.zero = ZeroStage::kOptimizer;
  layout.runtime = {true, true, true, true, true, true, true};
  layout.routing = {1.25, 1.5, MoeDispatcher::kDeepEp};
  layout.pipeline_first = true;
  return layout;
}

TEST(LayoutFields, EveryKnobReadsBackWhatItWrites) {
  const JobLayout set = every_knob_set();
  EXPECT_EQ(round_trip(set), set);
  JobLayout plain;  // v resolved, as a plan's always is (0 is the schedule's default, for a generator to fill)
  plain.virtual_stages = 1;
  EXPECT_EQ(round_trip(plain), plain);
  JobLayout per_stage = set;
  per_stage.recompute = Recompute::kNone;
  per_stage.stage_recompute = {Recompute::kFull, Recompute::kSelective, Recompute::kNone, Recompute::kNone};
  per_stage.pp = 4;
  per_stage.virtual_stages = 1;
  EXPECT_EQ(round_trip(per_stage), per_stage);
}

// A plan file leaves out what is at its default: a default layout writes
// only the fields every plan has.
TEST(LayoutFields, DefaultsAreLeftOut) {
  std::set<std::string> written;
  for (const LayoutField& field : layout_fields()) {
    if (!field.write(JobLayout{}).empty()) written.emplace(field.key);
  }
  EXPECT_EQ(written, (std::set<std::string>{"tp", "pp", "dp", "micro_batch_size", "microbatches", "schedule",
                                            "virtual", "recompute", "sequence_parallel", "zero"}));
}

TEST(LayoutFields, KeysAndOptionsAreUniqueAndFound) {
  std::set<std::string_view> names;
  for (const LayoutField& field : layout_fields()) {
    EXPECT_TRUE(names.insert(field.key).second) << field.key;
    if (field.option != field.key) {
      EXPECT_TRUE(names.insert(field.option).second) << field.option;
    }
    EXPECT_EQ(find_layout_field(field.key), &field);
    EXPECT_EQ(find_layout_field(field.option), &field);
    EXPECT_FALSE(field.help.empty()) << field.key;
    // The option is the key with dashes (or a name of its own, --precision).
    std::string dashed(field.key);
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    if (field.key != "fp8") {
      EXPECT_EQ(field.option, dashed);
    }
  }
  EXPECT_EQ(find_layout_field("seq"), nullptr);  // the job's, not its layout's
}

void expect_refused(std::string_view option, std::string_view text, const std::string& message) {
  JobLayout layout;
  try {
    read_option_value(*find_layout_field(option), text, layout);
    ADD_FAILURE() << option << " " << text << " was read";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

TEST(LayoutFields, BadValuesNameTheField) {
  expect_refused("tp", "0", "--tp must be >= 1 (got 0)");
  expect_refused("pp", "2.5", "--pp must be a whole number, got '2.5'");
  expect_refused("zero", "4", "--zero must be 0..3 (got 4)");
  expect_refused("precision", "fp16", "--precision: 'fp16' is not a precision; give bf16 or fp8");
  expect_refused("sequence-parallel", "yes", "--sequence-parallel must be true or false, got 'yes'");
  expect_refused("moe-dispatcher", "nccl", "--moe-dispatcher must be alltoall or deepep, got 'nccl'");
  // A file's fp8 is a flag; the command line's precision a name.
  JobLayout layout;
  find_layout_field("fp8")->read("true", "'fp8'", layout);
  EXPECT_TRUE(layout.runtime.fp8);
  read_option_value(*find_layout_field("precision"), "bf16", layout);
  EXPECT_FALSE(layout.runtime.fp8);
}

// The shape a layout's ranks train with holds its rank layout and only the
// runtime flags that apply: no overlap of a reduction that d = c = 1 lacks.
TEST(LayoutFields, AShapeTakesTheRankLayoutAndTheFlagsThatApply) {
  JobLayout layout = every_knob_set();
  layout.dp = 1;
  layout.cp = 1;
  layout.zero = ZeroStage::kNone;
  const TrainingShape shape = shape_of(layout, 4096);
  EXPECT_EQ(shape.tp, 4);
  EXPECT_EQ(shape.seq_len, 4096);
  EXPECT_EQ(shape.pipeline_first_ranks, 8);
  EXPECT_TRUE(shape.pipelined);
  EXPECT_FALSE(shape.runtime.overlap_grad_reduce);
  EXPECT_FALSE(shape.runtime.overlap_param_gather);
  EXPECT_TRUE(shape.runtime.tp_comm_overlap);  // t = 4 with sequence parallelism
  EXPECT_TRUE(shape.runtime.fp8);
  EXPECT_EQ(shape.routing, layout.routing);
}

// Counts that multiply past any job are refused before an int holds the
// product: p 2 x d 2^31 - 1 once wrapped to a negative GPU count (simulate
// printed "-2 x h100-sxm").
TEST(LayoutFields, CountsThatMultiplyPastAnyJobAreRefused) {
  const auto refusal = [](const JobLayout& layout) {
    try {
      check_layout_counts(layout);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  JobLayout layout;
  layout.pp = 2;
  layout.dp = 2147483647;  // 2^32 - 2 GPUs: -2 in an int
  EXPECT_NE(refusal(layout).find("tp x cp x pp x dp"), std::string::npos);
  EXPECT_THROW(shape_of(layout, 4096), InputError);
  // At the bounds: 10^7 GPUs, 2^31 - 1 sequences a step.
  layout.dp = 5'000'000;
  EXPECT_EQ(refusal(layout), "");
  layout.dp = 1;
  layout.micro_batch_size = 65536;
  layout.microbatches = 65536;  // 2^32 sequences: 0 in an int
  EXPECT_NE(refusal(layout).find("micro_batch_size x microbatches x dp"), std::string::npos);
  layout.microbatches = 32767;
  EXPECT_EQ(refusal(layout), "");
  layout.virtual_stages = 1 << 16;  // 2^17 model chunks on 2 ranks
  EXPECT_NE(refusal(layout).find("pp x virtual"), std::string::npos);
}

}  // namespace
}  // namespace pipeplan::models
