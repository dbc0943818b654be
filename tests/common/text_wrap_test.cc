// Text for a 120-column terminal: hand-worked breaks, and the invariants
// (no line over the width unless one word is, nothing lost or reordered, a
// wrapped command still one shell command).
#include "common/text_wrap.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/text_lines.h"

namespace pipeplan {
namespace {

using pipeplan::testing::lines_of;

// The words of `text` with each line's " \\" continuation dropped.
std::string words_of(const std::string& text) {
  std::istringstream input(text);
  std::string words;
  for (std::string word; input >> word;) {
    if (word != "\\") words += (words.empty() ? "" : " ") + word;
  }
  return words;
}

TEST(TextWrap, BreaksBetweenWordsAndIndentsTheRest) {
  EXPECT_EQ(wrap("aaa bbb ccc", "  ", 7), "aaa bbb\n  ccc\n");
  EXPECT_EQ(wrap("  kept indent", "    ", 80), "  kept indent\n");
  EXPECT_EQ(wrap("averyveryverylongword x", " ", 5), "averyveryverylongword\n x\n");
  EXPECT_EQ(clip("abcdefgh", 6), "abc...");
  EXPECT_EQ(clip("abc", 6), "abc");
}

TEST(TextWrap, ACommandKeepsEachFlagWithItsValueAndPastesAsOne) {
  EXPECT_EQ(wrap_command("run --a 1 --b 2", "", "  ", 12), "run --a 1 \\\n  --b 2\n");
  std::string command = "vllm serve org/model";
  for (int i = 0; i < 30; ++i) command += " --option-" + std::to_string(i) + " " + std::to_string(i * 7);
  command += " --flag";
  const std::string wrapped = wrap_command(command, "  ", "      ", 120);
  const std::vector<std::string> lines = lines_of(wrapped);
  ASSERT_GT(lines.size(), 1u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_LE(lines[i].size(), 120u) << lines[i];
    // Every line but the last continues; a flag's value never starts one.
    EXPECT_EQ(lines[i].ends_with(" \\"), i + 1 < lines.size()) << lines[i];
    if (i > 0) {
      EXPECT_TRUE(lines[i].starts_with("      --")) << lines[i];
    }
  }
  EXPECT_EQ(words_of(wrapped), words_of(command));
}

}  // namespace
}  // namespace pipeplan
