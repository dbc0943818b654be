#include "common/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/error.h"
#include "common/quote.h"

namespace pipeplan {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

struct NumberAndUnit {
  double value;
  std::string_view unit;
};

// Splits "12.5GiB" into 12.5 and "GiB"; rejects NaN, inf and negatives.
NumberAndUnit split_number(std::string_view text, std::string_view field, std::string_view example) {
  text = trim(text);
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) {
    throw InputError(fmt::format("{}: '{}' is not a number; write it like {}", field, text, example));
  }
  if (!std::isfinite(value)) {
    throw InputError(fmt::format("{}: '{}' is not a finite number; write it like {}", field, text, example));
  }
  if (value < 0) {
    throw InputError(fmt::format("{}: '{}' is negative; give a value >= 0", field, text));
  }
  return {value, trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)))};
}

template <std::size_t N>
double unit_scale(std::string_view unit, const std::array<std::pair<std::string_view, double>, N>& table,
                  std::string_view field, std::string_view text, std::string_view known) {
  for (const auto& [name, scale] : table) {
    if (unit == name) return scale;
  }
  throw InputError(fmt::format("{}: unknown unit '{}' in '{}'; use one of {}", field, unit, text, known));
}

constexpr std::array<std::pair<std::string_view, double>, 9> kByteUnits{{
    {"B", 1.0},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", 1024.0},
    {"MiB", 1024.0 * 1024.0},
    {"GiB", 1024.0 * 1024.0 * 1024.0},
    {"TiB", 1024.0 * 1024.0 * 1024.0 * 1024.0},
}};

constexpr std::array<std::pair<std::string_view, double>, 6> kTimeUnits{{
    {"ns", 1e-9},
    {"us", 1e-6},
    {"\xC2\xB5s", 1e-6},  // "µs"
    {"ms", 1e-3},
    {"s", 1.0},
    {"min", 60.0},
}};

constexpr std::array<std::pair<std::string_view, double>, 15> kRateUnits{{
    {"B/s", 1.0},
    {"KB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"KiB/s", 1024.0},
    {"MiB/s", 1024.0 * 1024.0},
    {"GiB/s", 1024.0 * 1024.0 * 1024.0},
    {"TiB/s", 1024.0 * 1024.0 * 1024.0 * 1024.0},
    {"Kb/s", 1e3 / 8},
    {"Mb/s", 1e6 / 8},
    {"Gb/s", 1e9 / 8},
    {"Tb/s", 1e12 / 8},
    {"Gbit/s", 1e9 / 8},
    {"Gbps", 1e9 / 8},
}};

}  // namespace

std::int64_t parse_bytes(std::string_view text, std::string_view field) {
  const auto [value, unit] = split_number(text, field, "'80GiB' or '1.5e9'");
  const double scale =
      unit.empty() ? 1.0 : unit_scale(unit, kByteUnits, field, text, "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB");
  const double bytes = std::round(value * scale);
  if (bytes > static_cast<double>(kMaxBytes)) {
    throw InputError(fmt::format("{}: {} is over the limit of {} ({})", field, quoted_input(text), format_bytes(kMaxBytes),
                                 "sums over a schedule must stay exact in 64 bits"));
  }
  return static_cast<std::int64_t>(bytes);
}

double parse_duration_s(std::string_view text, std::string_view field, double default_unit_s) {
  const auto [value, unit] = split_number(text, field, "'1.2ms' or '1.2'");
  const double scale = unit.empty() ? default_unit_s
                                    : unit_scale(unit, kTimeUnits, field, text, "ns, us, ms, s, min");
  const double seconds = value * scale;
  if (seconds > kMaxDurationS) {
    throw InputError(fmt::format("{}: {} is over the limit of {:g} s (about {:.0f} days)", field, quoted_input(text),
                                 kMaxDurationS, kMaxDurationS / 86400));
  }
  return seconds;
}

constexpr std::array<std::pair<std::string_view, double>, 5> kLifetimeUnits{{
    {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}, {"y", 365.25 * 86400.0},
}};
constexpr double kMaxLifetimeS = 1e12;

double parse_lifetime_s(std::string_view text, std::string_view field) {
  const auto [value, unit] = split_number(text, field, "'50000h' or '30d'");
  if (unit.empty()) {
    throw InputError(fmt::format("{}: '{}' needs a unit; write it like '50000h' or '30d' (s, min, h, d, y)", field,
                                 trim(text)));
  }
  const double seconds = value * unit_scale(unit, kLifetimeUnits, field, text, "s, min, h, d, y");
  if (seconds > kMaxLifetimeS) {
    throw InputError(fmt::format("{}: {} is over the limit of {:g} s", field, quoted_input(text), kMaxLifetimeS));
  }
  return seconds;
}

constexpr std::array<std::pair<std::string_view, double>, 4> kCountUnits{{
    {"K", 1e3}, {"M", 1e6}, {"B", 1e9}, {"T", 1e12},
}};

double parse_large_count(std::string_view text, std::string_view field) {
  const auto [value, unit] = split_number(text, field, "'15.6T' or '2e12'");
  const double scale = unit.empty() ? 1.0 : unit_scale(unit, kCountUnits, field, text, "K, M, B, T");
  const double count = value * scale;
  if (count > 1e18) throw InputError(fmt::format("{}: {} is over the limit of 1e18", field, quoted_input(text)));
  return count;
}

double parse_bandwidth(std::string_view text, std::string_view field) {
  const auto [value, unit] = split_number(text, field, "'50GB/s' or '400Gb/s'");
  const double scale =
      unit.empty() ? 1.0 : unit_scale(unit, kRateUnits, field, text, "B/s, KB/s, MB/s, GB/s, GiB/s, Gb/s, ...");
  const double rate = value * scale;
  if (!(rate > 0) || !std::isfinite(rate)) {
    throw InputError(fmt::format("{}: {} must be a finite rate above 0; write it like '50GB/s'", field, quoted_input(text)));
  }
  if (rate > kMaxBandwidth) {
    throw InputError(fmt::format("{}: {} is over the limit of 1000TB/s, past any memory or link; write it like '50GB/s'",
                                 field, quoted_input(text)));
  }
  return rate;
}

double parse_non_negative(std::string_view text, std::string_view field) {
  const auto [value, unit] = split_number(text, field, "'2.5'");
  if (!unit.empty()) {
    throw InputError(fmt::format("{}: unexpected text '{}' after the number in '{}'", field, unit, text));
  }
  return value;
}


std::string format_duration(double seconds) {
  if (seconds == 0) return "0 s";
  const std::pair<double, const char*> units[] = {{1e-3, "us"}, {1, "ms"}, {120, "s"}, {2 * 3600, "min"}, {72 * 3600, "h"}};
  const double scale[] = {1e6, 1e3, 1, 1.0 / 60, 1.0 / 3600};
  for (std::size_t i = 0; i < std::size(units); ++i) {
    if (std::fabs(seconds) < units[i].first) return fmt::format("{:#.4g} {}", seconds * scale[i], units[i].second);
  }
  return fmt::format("{:#.4g} days", seconds / 86400);
}

std::string format_bytes(double bytes) {
  constexpr std::array<std::string_view, 7> kNames{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = bytes;
  std::size_t unit = 0;
  // Stepped up at 1000, not 1024: "0.98 GiB", never a four-digit "1002.00 MiB".
  while (std::fabs(value) >= 1000.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", value);
  return fmt::format("{:.2f} {}", value, kNames[unit]);
}


std::string format_count(double count) {
  constexpr std::array<std::pair<double, const char*>, 4> kScales{
      {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}};
  for (const auto& [scale, suffix] : kScales) {
    if (std::abs(count) >= scale) return fmt::format("{:.2f}{}", count / scale, suffix);
  }
  return fmt::format("{:.0f}", count);
}

std::string format_rate(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }
std::string format_micros(double seconds) { return fmt::format("{:.3g} us", seconds * 1e6); }

std::string format_plural(long long count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

double parse_fraction(std::string_view text, std::string_view field) {
  if (trim(text).starts_with('-')) {
    throw InputError(
        fmt::format("{}: '{}' is negative; give a fraction between 0 and 1, e.g. 0.8 or 80%", field, text));
  }
  if (text.ends_with('%')) return parse_non_negative(text.substr(0, text.size() - 1), field) / 100.0;
  return parse_non_negative(text, field);
}

int parse_count(std::string_view text, std::string_view field, int minimum) {
  if (trim(text).starts_with('-')) {
    throw InputError(fmt::format("{}: '{}' must be a whole number >= {}", field, text, minimum));
  }
  const double value = parse_non_negative(text, field);
  if (value != std::floor(value) || value < minimum || value > 1e9) {
    throw InputError(fmt::format("{}: '{}' must be a whole number >= {}", field, text, minimum));
  }
  return static_cast<int>(value);
}

}  // namespace pipeplan
