// What each fuzz harness feeds its input to: one parser of user-written
// text and the work it leads to, within bounds. A target returns normally
// when the input is accepted or refused with the project's InputError;
// anything else (another exception, a broken round trip, a sanitizer
// report, a crash) is a finding. The libFuzzer programs in fuzz/ call
// these, and tests/fuzz/fuzz_regression_test.cc replays tests/data/fuzz/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::fuzz {

struct FuzzTarget {
  const char* name;  // the harness (and its tests/data/fuzz/ folder)
  void (*run)(std::string_view input);
};

const std::vector<FuzzTarget>& fuzz_targets();
const FuzzTarget& find_fuzz_target(std::string_view name);

}  // namespace pipeplan::fuzz
