// Reading a metric out of a command's JSON by its path: "bubble_rate",
// "best.tokens_per_s", "ranks_detail.0.peak_memory_bytes" (an index picks
// a list's entry) or "ranks_detail.*.peak_memory_bytes" ('*' maps over a
// list, giving a list).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::study {

// Throws InputError naming the missing key and the keys that are there.
nlohmann::ordered_json extract_metric(const nlohmann::ordered_json& output, std::string_view path);

// Every path a metric could name in `output`, lists written with '*'
// ("ranks_detail.*.peak_memory_bytes"), to suggest close ones.
std::vector<std::string> metric_paths(const nlohmann::ordered_json& output);

// Refuses a metric `output` does not have: one line with the close paths.
void check_metric_path(const nlohmann::ordered_json& output, std::string_view path, std::string_view command);

}  // namespace pipeplan::study
