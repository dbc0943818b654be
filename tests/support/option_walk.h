// The machinery of the option walks (tests/cli/option_walk_test.cc and
// tests/cli/option_walk_serving_test.cc): every option of every subcommand, in
// every way of running it, either changes what the command produces or is
// refused with one line and exit 2. The options come from each command's
// --help, so a new option without a case fails its walk.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::testing::option_walk {

using Args = std::map<std::string, std::string>;  // option -> what to append ("--tp 2"); {file} is a fresh path

// The long name of each option `pipeplan <command> --help` lists (the first
// one of an option with several).
inline std::vector<std::string> long_options(const std::string& command) {
  const CommandResult help = run(command + " --help");
  std::vector<std::string> names;
  std::istringstream lines(help.out);
  const std::regex option(R"(^  (?:-\w,)*--([a-z][a-z0-9-]*))");  // an option's own line, not a wrapped one
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, option) && match[1] != "help") names.push_back(match[1]);
  }
  return names;
}

using Result = std::function<std::string(const CommandResult&)>;

inline std::string standard_output(const CommandResult& result) { return result.out; }

struct Mode {
  Mode(std::string name_, std::string command_, std::string base_, Args args_, Result result_ = standard_output,
       std::set<std::string> same_ = {})
      : name(std::move(name_)), command(std::move(command_)), base(std::move(base_)), args(std::move(args_)),
        result(std::move(result_)), same(std::move(same_)) {}
  std::string name;
  std::string command;  // as `--help` takes it: "simulate", "model show"
  std::string base;     // arguments after the command
  Args args;            // this mode's cases, over the command's shared ones ("": in the base)
  Result result;        // what the run produced, to compare with the base run's
  std::set<std::string> same;  // options that must not change the result (threads, jobs)
};

inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

inline void walk(const Mode& mode, const Args& shared) {
  const CommandResult base = run(mode.command + " " + mode.base);
  ASSERT_EQ(base.code, 0) << mode.name << ": " << base.err;
  const std::string expected = mode.result(base);
  int counter = 0;
  for (const std::string& option : long_options(mode.command)) {
    const auto own = mode.args.find(option);
    const auto common = shared.find(option);
    if (own == mode.args.end() && common == shared.end()) {
      ADD_FAILURE() << mode.name << ": no case for --" << option << "; add one to this test";
      continue;
    }
    const std::string file = temp_path(mode.name + "-" + option + "-" + std::to_string(counter++));
    const std::string arg = replace_all(own != mode.args.end() ? own->second : common->second, "{file}", file);
    if (arg.empty()) continue;  // the mode's own option, in its base
    const CommandResult result = run(mode.command + " " + mode.base + " " + arg);
    const std::string where = mode.name + ": " + arg;
    if (result.code == 2) {
      EXPECT_EQ(lines(result.err), 1u) << where << "\n" << result.err;
      continue;
    }
    ASSERT_EQ(result.code, 0) << where << "\n" << result.err;
    if (arg.find(file) != std::string::npos) {
      EXPECT_TRUE(std::filesystem::exists(file)) << where << ": wrote nothing";
    } else if (mode.same.count(option) != 0) {
      EXPECT_EQ(mode.result(result), expected) << where << ": changed the result";
    } else {
      EXPECT_NE(mode.result(result), expected) << where << ": accepted, and changed nothing";
    }
  }
}

}  // namespace pipeplan::testing::option_walk
