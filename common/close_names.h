// "Did you mean": the known names closest to a word a user typed, for
// refusals of unknown models, hardware, options, schedule names and keys.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan {

// The word with case, '-', '_', '.' and spaces dropped ("Llama-3.1-405B" ->
// "llama31405b"), under which spellings of one name compare equal.
std::string name_key(std::string_view word);

// Up to `limit` candidates within a small edit distance of `word` (compared
// as name keys), or that contain it or are contained in it, closest first;
// ties keep the candidates' order.
std::vector<std::string> close_names(std::string_view word, const std::vector<std::string>& candidates,
                                     std::size_t limit = 3);

// "; did you mean llama3.1-405b?" (or "... a or b?"), or empty.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// The same over several spellings of each name: spellings[i] stands for
// names[i] (an alias for its canonical name), and each name is offered once.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& spellings,
                         const std::vector<std::string>& names);

}  // namespace pipeplan
