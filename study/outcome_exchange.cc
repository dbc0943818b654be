#include "study/outcome_exchange.h"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace pipeplan::study {

std::string pack_outcomes(const std::vector<PointOutcome>& outcomes) {
  nlohmann::ordered_json ran = nlohmann::ordered_json::array();
  for (std::size_t index = 0; index < outcomes.size(); ++index) {
    const PointOutcome& outcome = outcomes[index];
    if (!outcome.ran) continue;
    ran.push_back({{"index", index},
                   {"metrics", outcome.metrics},
                   {"metric_errors", outcome.metric_errors},
                   {"fields", outcome.fields},
                   {"error", outcome.error}});
  }
  const std::vector<std::uint8_t> bytes = nlohmann::ordered_json::to_cbor(ran);
  return {bytes.begin(), bytes.end()};
}

namespace {

void merge_one(const nlohmann::ordered_json& result, std::vector<PointOutcome>& outcomes) {
  const auto index = result.at("index").get<std::size_t>();
  if (index >= outcomes.size()) {
    throw InputError(fmt::format("a rank sent point {} of a study of {} points: every rank must run the same "
                                 "study file",
                                 index, outcomes.size()));
  }
  PointOutcome& outcome = outcomes[index];
  outcome.metrics = result.at("metrics");
  outcome.metric_errors = result.at("metric_errors").get<std::map<std::string, std::string>>();
  outcome.fields = result.at("fields");
  outcome.error = result.at("error").get<std::string>();
  outcome.ran = true;
}

}  // namespace

void merge_outcomes(std::string_view packed, std::vector<PointOutcome>& outcomes) {
  try {
    for (const auto& result : nlohmann::ordered_json::from_cbor(packed.begin(), packed.end())) {
      merge_one(result, outcomes);
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("a rank's study results are damaged: {}", error.what()));
  }
}

}  // namespace pipeplan::study
