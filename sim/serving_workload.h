// The requests a serving simulation replays: drawn (Poisson arrivals at a
// rate, lengths fixed or uniform in a range), or read from a trace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/serving.h"

namespace pipeplan::sim {

// Token counts: one value, or uniform integers in [low, high].
struct LengthRange {
  int low = 0;
  int high = 0;
};
// "1024" or "512:2048"; throws InputError naming `field`.
LengthRange parse_length_range(std::string_view text, std::string_view field);

// `count` requests, lengths drawn from the ranges; arrivals a Poisson
// process of `rate` per second from time 0 (rate 0: all at time 0, for a
// closed loop). Drawn from the generator's raw bits: the same on every
// standard library for a seed.
std::vector<ServingRequest> draw_requests(int count, double rate, LengthRange prompt, LengthRange output,
                                          std::uint64_t seed);

// A CSV with the header `arrival_s,prompt_tokens,output_tokens` and a row
// per request (arrival in seconds from the trace's start). Throws
// InputError naming the file, line and field.
std::vector<ServingRequest> parse_request_trace(const std::string& text, const std::string& source);
std::vector<ServingRequest> read_request_trace(const std::string& path);

}  // namespace pipeplan::sim
