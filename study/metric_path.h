// Reading a metric out of a command's JSON by its path: "bubble_rate",
// "best.tokens_per_s", or "ranks_detail.*.peak_memory_bytes" ('*' maps over
// a list, giving a list).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace pipeplan::study {

// Throws InputError naming the missing key and the keys that are there.
nlohmann::ordered_json extract_metric(const nlohmann::ordered_json& output, std::string_view path);

}  // namespace pipeplan::study
