// One libFuzzer program per target (PIPEPLAN_FUZZ_TARGET names it): the
// input goes to the target as text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const pipeplan::fuzz::FuzzTarget& target = pipeplan::fuzz::find_fuzz_target(PIPEPLAN_FUZZ_TARGET);
  target.run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
