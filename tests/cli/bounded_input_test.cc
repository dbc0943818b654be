// Bad input found by fuzzing and sanitizers, each refused in one line with
// exit 2 before any work is sized by it: huge counts, overflowing indices,
// non-finite quantities, directories named as files, malformed YAML,
// nested expressions, control bytes in echoed text.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/cli_support.h"

namespace pipeplan::testing {
namespace {

const std::string kLlama = "--model llama3-70b --hardware h100-sxm --pp 4 --tp 8 --seq 8192";

TEST(BoundedInput, LayoutRepeatsAreCountedNotExpanded) {
  // Expanded in full this took 24 s and 4 GB, then reported -2147483589.
  expect_refused("simulate " + kLlama + " --layout 'Et*2147483647|t*20|t*20|t*20L'",
                 "it holds 2147483707 blocks but the model has 80");
  expect_refused("simulate " + kLlama + " --layout '(Et)*9000000000000000000|t|t|tL'",
                 "it holds 9000000000000000003 blocks");
  expect_refused("simulate " + kLlama + " --layout 'Et*20|t*20|t*20|t*20L(|)*1000000000'",
                 "it has 1000000004 stages but the pipeline has 4");
  expect_refused("simulate " + kLlama + " --layout 'Et*99999999999999999999|t*20|t*20|t*20L'", "is too large");
  // Found by the layout harness: an empty group repeated ten billion times.
  expect_refused("simulate " + kLlama + " --layout 'Et*20|t*20|t*20|t*20L()*9513339999'",
                 "an empty group '()' holds no layers");
  // Also found there: the stage count (separators + 1) overflowed once the separators saturated.
  expect_refused("simulate " + kLlama + " --layout 'Et*20|t*20|t*20|t*20L(|)*9223372036854775807'",
                 "stages but the pipeline has 4");
}

TEST(BoundedInput, SizesAndTimesStayFinite) {
  expect_refused("simulate -p 4 -m 8 --tf 1 --tb 1 --act-bytes 8388608TiB", "over the limit of 1.00 PiB");
  expect_refused("simulate -p 4 -m 8 --tf 1e308min --tb 1", "--tf: '1e308min' is over the limit");
  expect_refused("simulate -p 4 -m 8 --tf nan --tb 1", "not a finite number");
  expect_refused("simulate -p 4 -m 8 --tf 1 --tb 1 --link-bandwidth 0", "must be a finite rate above 0");
  expect_refused("simulate -p 100000 -m 1000 --tf 1 --tb 1", "over the limit of 5e+07");
}

TEST(BoundedInput, CsvIndicesAreCheckedBeforeAnythingIsSized) {
  // Once: "-2147483648 micro-batches"; a 17-byte file asked for 32 GB.
  expect_refused("simulate --tf 1 --tb 1 --schedule-csv " + write_temp("max.csv", "0F0,0B2147483647\n"),
                 "micro-batch 2147483647 in a file of 2 actions");
  expect_refused("simulate --tf 1 --tb 1 --schedule-csv " + write_temp("big_mb.csv", "0F0,0B1000000000\n"),
                 "micro-batch 1000000000 in a file of 2 actions");
  expect_refused("simulate --tf 1 --tb 1 --schedule-csv " + write_temp("big_stage.csv", "1000000000F0\n"),
                 "stage 1000000000 in a file of 1 action:");
  expect_refused("simulate --tf 1 --tb 1 --schedule-csv " + write_temp("overflow.csv", "0F99999999999\n"),
                 "index 99999999999 is too large");
}

TEST(BoundedInput, ZeroSizesInThePlanSearchAreRefused) {
  const std::string plan = "plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 ";
  expect_refused(plan + "--tp 0", "--tp must be >= 1");
  expect_refused(plan + "--pp 0", "--pp must be >= 1");
  expect_refused(plan + "--micro-batch-size 0", "--micro-batch-size must be >= 1");
}

TEST(BoundedInput, OutputFilesStayInsideTheOutputFolder) {
  // A plot named '../../x' once wrote its SVG two folders above --out.
  const std::string study = write_temp("escape-study.yaml", R"(title: escape
mode: simulate
base: {tf: 1ms, tb: 1ms, tcomm: 0}
sweep:
  grid: {schedule: [GPipe], stages: [4], microbatches: [8, 16]}
metrics: [bubble_rate]
plots:
  - {name: ../../x, kind: line, x: microbatches, y: bubble_rate}
)");
  const std::string out = temp_path("escape-out/a/b");
  expect_refused("study " + study + " --out " + out, "plot name '../../x' names its SVG file in the output folder");
  EXPECT_FALSE(std::filesystem::exists(temp_path("escape-out/x.svg")));
}

TEST(BoundedInput, DirectoriesAreNotFiles) {
  const std::string dir = ::testing::TempDir();
  expect_refused("simulate -p 2 -m 2 --costs " + dir, "--costs: '" + dir + "' is a directory");
  expect_refused("simulate --plan " + dir, "is a directory; give a file");
  expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 8 --profile " + dir,
                 "is a directory; give a file");
  expect_refused("study " + dir, "is a directory; give a file");
  expect_refused("simulate --tf 1 --tb 1 --schedule-csv " + dir, "is a directory; give a file");
}

// A study of one point with one plot whose closed form is `expression`
// and whose label is `label` (YAML).
std::string study_with_reference(const std::string& name, const std::string& label, const std::string& expression) {
  return write_temp(name, "title: t\nmode: simulate\nbase: {tf: 1ms, tb: 1ms}\nsweep:\n  grid:\n    microbatches: [4]\n"
                          "metrics: [bubble_rate]\nplots:\n  - name: p\n    kind: line\n    x: microbatches\n"
                          "    y: bubble_rate\n    reference:\n      - {label: " + label + ", expression: \"" +
                          expression + "\"}\n");
}

TEST(BoundedInput, MalformedYamlNamesTheFile) {
  // yaml-cpp's own exceptions once escaped as internal errors (exit 1).
  std::string text = slurp(kConfigs + "/profiles/gpt2-small-cpu-epyc.yaml");
  const auto at = text.find("forward: {");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('}', at) + 1 - at, "forward: 3");
  const std::string profile = write_temp("scalar_timing.yaml", text);
  expect_refused("plan --model gpt2-small --hardware cpu --gpus 2 --global-batch 4 --seq 128 --pp 2 --profile " + profile,
                 profile + ":13:14: a field is indexed as a map but is a single value");
  const std::string study = study_with_reference("map_label.yaml", "{a: 1}", "1");
  expect_refused("study " + study + " --out " + temp_path("map_label_out"), study + ":14:17: a field has the wrong kind");
}

TEST(BoundedInput, ProfileNumbersMustBeFiniteAndNonNegative) {
  const std::string good = slurp(kConfigs + "/profiles/gpt2-small-cpu-epyc.yaml");
  for (const std::string& bad : {std::string("-1"), std::string(".nan"), std::string(".inf")}) {
    std::string text = good;
    const auto at = text.find("median_s: ");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, text.find(',', at) - at, "median_s: " + bad);
    const std::string path = write_temp("bad_time.yaml", text);
    expect_refused("plan --model gpt2-small --hardware cpu --gpus 2 --global-batch 4 --seq 128 --pp 2 --profile " + path,
                   "'median_s' must be a finite number >= 0");
  }
}

TEST(BoundedInput, ModelSizesAreBoundedBeforeCounting) {
  std::string model = slurp(kConfigs + "/models/llama3-8b.yaml");
  const auto at = model.find("hidden: ");
  ASSERT_NE(at, std::string::npos);
  model.replace(at, model.find('\n', at) - at, "hidden: 2000000000");
  expect_refused("model show " + write_temp("huge_hidden.yaml", model),
                 "huge_hidden.yaml:6:9: 'hidden' = 2000000000 is over the limit of 1048576");
  std::string vocab = slurp(kConfigs + "/models/llama3-8b.yaml");
  const auto v = vocab.find("vocab: ");
  vocab.replace(v, vocab.find('\n', v) - v, "vocab: 9000000000000000000");
  expect_refused("model show " + write_temp("huge_vocab.yaml", vocab),
                 "'vocab' = 9000000000000000000 is over the limit");
}

TEST(BoundedInput, DeepExpressionsAreRefusedNotRecursed) {
  // 100,000 nested parentheses or minus signs once overflowed the parser's stack.
  const std::string parens = study_with_reference("deep.yaml", "deep", std::string(100000, '(') + "1" +
                                                                          std::string(100000, ')'));
  expect_refused("study " + parens + " --out " + temp_path("deep_out"), "over the limit of 10000");
  const std::string minus = study_with_reference("minus.yaml", "minus", std::string(5000, '-') + "1");
  expect_refused("study " + minus + " --out " + temp_path("minus_out"), "nested deeper than 200");
}

TEST(BoundedInput, EchoedTextStaysOnOneLine) {
  expect_refused("simulate -p 4 -m 8 --tf 1 --tb 1 --schedule \"$(printf 'x\\ny\\033[31m')\"",
                 "unknown schedule 'x\\ny\\x1b[31m'");
}

}  // namespace
}  // namespace pipeplan::testing
