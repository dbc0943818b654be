#include "sim/serving_workload.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <random>
#include <sstream>

#include "common/error.h"
#include "common/units.h"
#include "common/text_file.h"

namespace pipeplan::sim {
namespace {

constexpr int kMostTokens = 100'000'000;

// A count of tokens; `hint` says how the field is written.
int parse_tokens(std::string_view text, std::string_view field, std::string_view whole, std::string_view hint) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 1 || value > kMostTokens) {
    throw InputError(fmt::format("{}: '{}' is not a token count from 1 to {} ({})", field, whole, kMostTokens, hint));
  }
  return value;
}

constexpr std::string_view kRangeHint = "write 1024, or 512:2048 for a range";
constexpr std::string_view kRowHint = "a whole number";

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

class UniformBits {
 public:
  explicit UniformBits(std::uint64_t seed) : engine_(seed) {}
  double open_unit() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1p-53; }  // in (0, 1)
  int in(LengthRange range) {
    const double span = static_cast<double>(range.high) - range.low + 1;
    return range.low + std::min(range.high - range.low, static_cast<int>(open_unit() * span));
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

LengthRange parse_length_range(std::string_view text, std::string_view field) {
  const std::string_view whole = trim(text);
  const std::size_t colon = whole.find(':');
  if (colon == std::string_view::npos) {
    const int value = parse_tokens(whole, field, whole, kRangeHint);
    return {value, value};
  }
  const LengthRange range{parse_tokens(trim(whole.substr(0, colon)), field, whole, kRangeHint),
                          parse_tokens(trim(whole.substr(colon + 1)), field, whole, kRangeHint)};
  if (range.low > range.high) {
    throw InputError(fmt::format("{}: '{}' runs from high to low; write the smaller count first", field, whole));
  }
  return range;
}

std::vector<ServingRequest> draw_requests(int count, double rate, LengthRange prompt, LengthRange output,
                                          std::uint64_t seed) {
  if (count < 1) throw InputError("--requests must be at least 1");
  if (!(rate >= 0) || !std::isfinite(rate)) throw InputError("--rate must be a number of requests per second above 0");
  UniformBits arrivals(seed), lengths(seed ^ 0x5bd1e9955bd1e995ULL);
  std::vector<ServingRequest> requests(static_cast<std::size_t>(count));
  double now = 0;
  for (ServingRequest& request : requests) {
    if (rate > 0) now += -std::log(arrivals.open_unit()) / rate;
    request.arrival_s = now;
    request.prompt_tokens = lengths.in(prompt);
    request.output_tokens = lengths.in(output);
  }
  return requests;
}

std::vector<ServingRequest> parse_request_trace(const std::string& text, const std::string& source) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  std::vector<ServingRequest> requests;
  bool header = false;
  while (std::getline(lines, line)) {
    ++number;
    const std::string_view row = trim(line);
    if (row.empty() || row.front() == '#') continue;
    if (!header) {
      if (row != "arrival_s,prompt_tokens,output_tokens") {
        throw InputError(fmt::format("{}:{}: the header must be 'arrival_s,prompt_tokens,output_tokens'", source, number));
      }
      header = true;
      continue;
    }
    const std::size_t first = row.find(',');
    const std::size_t second = first == std::string_view::npos ? first : row.find(',', first + 1);
    if (second == std::string_view::npos || row.find(',', second + 1) != std::string_view::npos) {
      throw InputError(fmt::format("{}:{}: a row has three fields: arrival_s,prompt_tokens,output_tokens", source, number));
    }
    const std::string arrival(trim(row.substr(0, first)));
    ServingRequest request;
    char* end = nullptr;
    request.arrival_s = std::strtod(arrival.c_str(), &end);
    if (arrival.empty() || *end != '\0' || !(request.arrival_s >= 0) || !std::isfinite(request.arrival_s)) {
      throw InputError(fmt::format("{}:{}: arrival_s '{}' is not a time in seconds >= 0", source, number, arrival));
    }
    if (request.arrival_s > kMaxDurationS) {
      throw InputError(fmt::format("{}:{}: arrival_s '{}' is past the {:.0e} s (about 116 days) a trace may span",
                                   source, number, arrival, kMaxDurationS));
    }
    const std::string where = fmt::format("{}:{}", source, number);
    const std::string_view prompt = trim(row.substr(first + 1, second - first - 1));
    const std::string_view output = trim(row.substr(second + 1));
    request.prompt_tokens = parse_tokens(prompt, where + ": prompt_tokens", prompt, kRowHint);
    request.output_tokens = parse_tokens(output, where + ": output_tokens", output, kRowHint);
    requests.push_back(request);
  }
  if (requests.empty()) throw InputError(fmt::format("{}: no requests (a header and one row per request)", source));
  return requests;
}

std::vector<ServingRequest> read_request_trace(const std::string& path) {
  return parse_request_trace(read_text_file(path, "--request-trace"), path);
}

}  // namespace pipeplan::sim
