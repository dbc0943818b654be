// Parsing and printing of quantities with units ("80GiB", "50GB/s", "1.2ms").
// Internally sizes are bytes (std::int64_t), times seconds, rates bytes/s.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pipeplan {

// Limits on what a user may write, so that every sum over a schedule
// (bytes held at once, times along a path) stays finite and exact: a size
// of at most 2^50 bytes (1 PiB) and a duration of at most 10^7 s.
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
inline constexpr double kMaxDurationS = 1e7;
// A rate of at most 10^15 bytes/s (1000 TB/s: over 50 times the fastest GPU
// memory and 500 times the fastest link), so that no transfer takes 0 s.
inline constexpr double kMaxBandwidth = 1e15;

// Bytes: plain number = bytes; units B, KB, MB, GB, TB (powers of 1000) and
// KiB, MiB, GiB, TiB (powers of 1024). Throws InputError naming `field`.
std::int64_t parse_bytes(std::string_view text, std::string_view field);

// Duration in seconds: units ns, us, ms, s, min; a plain number is taken in
// `default_unit_s` seconds (1e-3 for options documented in milliseconds).
double parse_duration_s(std::string_view text, std::string_view field, double default_unit_s);

// A long span (a mean time between failures, a run's length) in seconds:
// units s, min, h, d, y (365.25 days), required; at most 10^12 s.
double parse_lifetime_s(std::string_view text, std::string_view field);

// A count that may be large (tokens): "15.6T", "2B", "5e11"; suffixes K,
// M, B (10^9), T; at most 10^18.
double parse_large_count(std::string_view text, std::string_view field);

// Bandwidth in bytes per second: "50GB/s", "400Gb/s" (bits), "25GiB/s";
// a plain number is bytes per second. Above 0, at most kMaxBandwidth.
double parse_bandwidth(std::string_view text, std::string_view field);

// A plain non-negative finite number (rejects NaN, inf, negatives).
double parse_non_negative(std::string_view text, std::string_view field);

// A share: "80%" or "0.8" (>= 0; the caller bounds it).
double parse_fraction(std::string_view text, std::string_view field);

// A whole number >= `minimum` and at most 10^9 (GPUs, nodes, layout sizes).
int parse_count(std::string_view text, std::string_view field, int minimum);

// Human forms for reports: "1.50 GiB", "70.55B" (a count with
// K, M, B or T). Bytes come as a double: exact counts and estimates of any
// size alike.
std::string format_bytes(double bytes);
std::string format_count(double count);
// A duration with 4 significant digits in the unit that reads best, for
// reports a person reads: "850.2 us", "61.28 ms", "28.58 s", "18.63 min",
// "3.092 h", "61.62 days".
std::string format_duration(double seconds);
// A link's rate, "50 GB/s"; a latency in microseconds, "2 us".
std::string format_rate(double bytes_per_s);
std::string format_micros(double seconds);
// "1 run", "3 runs": a count and its noun, plural with an s.
std::string format_plural(long long count, std::string_view noun);

}  // namespace pipeplan
