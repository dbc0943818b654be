// Every YAML file pipeplan reads refuses a key given twice in one map
// (yaml-cpp would keep both and read the first), a second document
// (yaml-cpp's Load drops it), an alias inside the node it names (a tree
// that contains itself) and aliases expanding past a bound.
#include "common/yaml_fields.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::testing {
namespace {

TEST(YamlFields, AKeyGivenTwiceIsRefusedNamingBothLines) {
  try {
    parse_yaml_text("name: a\nlayers: 32\nhidden: 4096\nlayers: 16\n", "model.yaml");
    FAIL() << "a repeated key was accepted";
  } catch (const ParseError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("model.yaml:4"), std::string::npos) << what;
    EXPECT_NE(what.find("'layers' is given twice in one map (line 2 and here)"), std::string::npos) << what;
  }
  // Nested maps, and maps inside lists, too; the same key in two maps is fine.
  EXPECT_THROW(parse_yaml_text("base: {gpu: {memory: 80GB, memory: 40GB}}\n", "hw.yaml"), ParseError);
  EXPECT_THROW(parse_yaml_text("runs:\n  - {name: a, tp: 2, tp: 4}\n", "runs.yaml"), ParseError);
  EXPECT_NO_THROW(parse_yaml_text("runs:\n  - {name: a, tp: 2}\n  - {name: b, tp: 4}\n", "runs.yaml"));
}

TEST(YamlFields, TheCommandsRefuseARepeatedKeyInOneLine) {
  const std::string model = write_temp("repeated-model.yaml",
                                       "name: repeated\nlayers: 32\nhidden: 4096\nffn: 14336\nheads: 32\n"
                                       "kv_heads: 8\nvocab: 128256\ncontext: 8192\nlayers: 16\n");
  expect_refused("model show " + model, "'layers' is given twice");
  const std::string hardware = write_temp("repeated-hardware.yaml", "base: h100-sxm\nname: x\nname: y\n");
  expect_refused("hardware show " + hardware, "'name' is given twice");
}

TEST(YamlFields, ASecondDocumentIsRefusedAtItsLine) {
  try {
    parse_yaml_text("name: a\n---\nname: b\n", "two.yaml");
    FAIL() << "a second document was accepted";
  } catch (const ParseError& error) {
    EXPECT_NE(std::string(error.what()).find("two.yaml:2:1: a second YAML document"), std::string::npos)
        << error.what();
  }
  EXPECT_NO_THROW(parse_yaml_text("---\nname: a\n", "one.yaml"));
  EXPECT_NO_THROW(parse_yaml_text("name: a\n---\n", "empty-second.yaml"));  // nothing is dropped
  // yaml-cpp reads ",," as an endless run of empty documents: read once.
  EXPECT_TRUE(parse_yaml_text(",,", "commas.yaml").IsNull());
  expect_refused("hardware show " + write_temp("two-documents.yaml", "base: h100-sxm\n---\nname: y\n"),
                 "a second YAML document");
}

std::string refusal(const std::string& text) {
  try {
    parse_yaml_text(text, "aliases.yaml");
  } catch (const ParseError& error) {
    return error.what();
  }
  return "accepted";
}

TEST(YamlFields, AnAliasInsideTheNodeItNamesIsRefusedAtTheAlias) {
  // yaml-cpp registers an anchor when its collection starts, so each of
  // these loads as a tree containing itself, which no walk finishes.
  EXPECT_NE(refusal("&a [*a]").find("aliases.yaml:1:5: an alias inside the node it names"), std::string::npos);
  EXPECT_NE(refusal("name: &a {x: [1, {y: *a}]}\n").find("aliases.yaml:1:22:"), std::string::npos);
  EXPECT_NE(refusal("a: &a\n  b: *a\n").find("aliases.yaml:2:6:"), std::string::npos);
  // An alias after its node closed is a copy, read as written.
  const YAML::Node copied = parse_yaml_text("a: &a {x: 1}\nb: *a\nc: [*a, *a]\n", "aliases.yaml");
  EXPECT_EQ(copied["b"]["x"].as<int>(), 1);
  EXPECT_EQ(copied["c"][1]["x"].as<int>(), 1);
  expect_refused("hardware show " + write_temp("recursive-alias.yaml", "base: &a {gpu: *a}\n"),
                 "an alias inside the node it names");
}

TEST(YamlFields, AliasesExpandingPastTheBoundAreRefused) {
  // Each level doubles: level k names 2^(k+2) - 1 nodes. Up to level 13 the
  // text expands to 65,533 nodes (the root map, 14 keys and the levels);
  // level 14 adds 65,536 and passes the 100,000 bound.
  std::string text = "a0: &a0 [x, x]\n";
  for (int level = 1; level <= 13; ++level) {
    text += fmt::format("a{0}: &a{0} [*a{1}, *a{1}]\n", level, level - 1);
  }
  EXPECT_EQ(refusal(text), "accepted");
  text += "a14: &a14 [*a13, *a13]\n";
  EXPECT_NE(refusal(text).find("aliases expand this text to over 100000 nodes"), std::string::npos);
}

}  // namespace
}  // namespace pipeplan::testing
