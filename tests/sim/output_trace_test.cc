// The Chrome trace: every compute action once, slices on one thread never
// partially overlap, flows pair up, busy time adds up.
#include "sim/output/chrome_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "sim/generators/registry.h"

namespace pipeplan::sim {
namespace {

using nlohmann::json;

struct Case {
  const char* schedule;
  int ranks;
  int microbatches;
  bool overlap;
};

// A slow link (3 ms per message against 1 ms forwards) makes transfers queue;
// ranks_per_node = 2 makes ranks 0/1 -> 2/3 share the node pair's link.
SimulationReport run(const Case& c) {
  const Schedule schedule = generate_schedule(c.schedule, {c.ranks, c.microbatches, 0, 0});
  RankCosts rank_costs;
  rank_costs.forward_s = {1e-3};
  rank_costs.backward_input_s = {2e-3};
  rank_costs.backward_weight_s = {1e-3};
  rank_costs.activation_bytes = {1 << 20};
  rank_costs.send_bytes = {3'000'000};
  Topology topology;
  topology.intra_node = {1e-4, 1e9};
  topology.inter_node = {1e-4, 1e9};
  topology.ranks_per_node = 2;
  SimulationOptions options;
  options.overlap_comm = c.overlap;
  options.record_timeline = true;
  return simulate(schedule, expand_rank_costs(rank_costs, schedule), topology, options);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"GPipe", 4, 8, true},  {"1F1B", 4, 8, true},           {"1F1B", 4, 8, false},
      {"ZBH1", 4, 8, true},   {"Interleaved1F1B", 4, 8, true}, {"DualPipeV", 4, 8, true},
      {"ZBVZeroBubble", 4, 8, false},
  };
  return all;
}

std::string name_of(const Case& c) { return std::string(c.schedule) + (c.overlap ? " overlap" : " blocking"); }

json trace_of(const SimulationReport& report) { return json::parse(chrome_trace_json(report)); }

std::vector<json> events_with_phase(const json& trace, const std::string& phase) {
  std::vector<json> events;
  for (const json& event : trace.at("traceEvents")) {
    if (event.at("ph") == phase) events.push_back(event);
  }
  return events;
}

bool is_compute_slice(const json& event) {
  static const std::set<std::string> kinds = {"forward", "backward", "backward-input", "backward-weight"};
  return event.at("ph") == "X" && kinds.count(event.at("cat").get<std::string>()) > 0;
}

TEST(ChromeTrace, ListsEveryComputeActionOnce) {
  for (const Case& c : cases()) {
    const SimulationReport report = run(c);
    std::multiset<std::pair<int, std::string>> expected;
    for (const ComputeRecord& record : report.timeline->computes) {
      expected.insert({record.rank, to_string(record.action)});
    }
    std::multiset<std::pair<int, std::string>> actual;
    for (const json& event : events_with_phase(trace_of(report), "X")) {
      if (!is_compute_slice(event)) continue;
      EXPECT_EQ(event.at("tid"), kComputeTid) << name_of(c);
      actual.insert({event.at("pid").get<int>(), event.at("name").get<std::string>()});
    }
    EXPECT_EQ(actual.size(), report.compute_actions) << name_of(c);
    EXPECT_EQ(actual, expected) << name_of(c);
  }
}

TEST(ChromeTrace, SlicesOnOneThreadNeverOverlap) {
  for (const Case& c : cases()) {
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> threads;
    for (const json& event : events_with_phase(trace_of(run(c)), "X")) {
      threads[{event.at("pid").get<int>(), event.at("tid").get<int>()}].push_back(
          {event.at("ts").get<double>(), event.at("dur").get<double>()});
    }
    EXPECT_GT(threads.size(), 1u) << name_of(c);
    for (auto& [thread, slices] : threads) {
      std::sort(slices.begin(), slices.end());
      for (std::size_t i = 1; i < slices.size(); ++i) {
        EXPECT_GE(slices[i].first, slices[i - 1].first + slices[i - 1].second - 1e-6)
            << name_of(c) << " pid " << thread.first << " tid " << thread.second << " slice " << i;
      }
    }
  }
}

// Each flow point lies inside a slice of its own thread, so viewers can bind it.
bool inside_a_slice(const json& point, const std::vector<json>& slices) {
  return std::any_of(slices.begin(), slices.end(), [&](const json& slice) {
    const double ts = point.at("ts").get<double>();
    const double start = slice.at("ts").get<double>();
    return slice.at("pid") == point.at("pid") && slice.at("tid") == point.at("tid") && start <= ts &&
           ts <= start + slice.at("dur").get<double>();
  });
}

TEST(ChromeTrace, EveryFlowStartHasAnEnd) {
  for (const Case& c : cases()) {
    const SimulationReport report = run(c);
    const json trace = trace_of(report);
    const std::vector<json> slices = events_with_phase(trace, "X");
    std::map<std::uint64_t, int> ends;
    for (const json& end : events_with_phase(trace, "f")) {
      EXPECT_EQ(end.at("bp"), "e");
      EXPECT_TRUE(inside_a_slice(end, slices)) << name_of(c);
      ++ends[end.at("id").get<std::uint64_t>()];
    }
    const std::vector<json> starts = events_with_phase(trace, "s");
    EXPECT_EQ(starts.size(), report.transfers) << name_of(c);
    for (const json& start : starts) {
      EXPECT_EQ(start.at("cat"), "p2p");
      EXPECT_TRUE(inside_a_slice(start, slices)) << name_of(c);
      EXPECT_EQ(ends[start.at("id").get<std::uint64_t>()], 1) << name_of(c) << " flow " << start.at("id");
    }
    EXPECT_EQ(ends.size(), starts.size()) << name_of(c);
  }
}

TEST(ChromeTrace, ComputeTimePerRankIsBusyTime) {
  for (const Case& c : cases()) {
    const SimulationReport report = run(c);
    std::vector<double> busy_us(static_cast<std::size_t>(report.ranks), 0.0);
    for (const json& event : events_with_phase(trace_of(report), "X")) {
      if (is_compute_slice(event)) busy_us[event.at("pid").get<std::size_t>()] += event.at("dur").get<double>();
    }
    for (const RankReport& rank : report.ranks_detail) {
      // Each slice is rounded to the nanosecond.
      const double tolerance = 1e-3 * static_cast<double>(rank.compute_actions);
      EXPECT_NEAR(busy_us[static_cast<std::size_t>(rank.rank)], rank.busy_s * 1e6, tolerance) << name_of(c);
    }
  }
}

TEST(ChromeTrace, NamesOneProcessPerRank) {
  const SimulationReport report = run({"1F1B", 4, 8, true});
  const json trace = trace_of(report);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  std::map<int, std::string> names;
  for (const json& event : events_with_phase(trace, "M")) {
    if (event.at("name") == "process_name") names[event.at("pid").get<int>()] = event.at("args").at("name");
  }
  ASSERT_EQ(names.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(names[rank], "rank " + std::to_string(rank));
}

TEST(ChromeTrace, ColoursEachComputeKindApart) {
  const json trace = trace_of(run({"ZBH1", 4, 8, true}));
  std::map<std::string, std::set<std::string>> colours;  // category -> cnames
  for (const json& event : events_with_phase(trace, "X")) {
    if (is_compute_slice(event)) colours[event.at("cat")].insert(event.at("cname").get<std::string>());
  }
  ASSERT_EQ(colours.count("backward-input"), 1u);
  ASSERT_EQ(colours.count("backward-weight"), 1u);
  std::set<std::string> distinct;
  for (const auto& [category, names] : colours) {
    EXPECT_EQ(names.size(), 1u) << category;
    distinct.insert(names.begin(), names.end());
  }
  EXPECT_EQ(distinct.size(), colours.size());
}

TEST(ChromeTrace, QueuedTransfersKeepTheirOwnThreads) {
  const SimulationReport report = run({"GPipe", 4, 8, true});
  double max_queued_us = 0;
  for (const json& event : events_with_phase(trace_of(report), "X")) {
    if (event.at("cat") != "send" && event.at("cat") != "recv") continue;
    const int tid = event.at("tid").get<int>();
    EXPECT_TRUE((tid >= kSendTidBase && tid < kSendTidBase + 4) || (tid >= kRecvTidBase && tid < kRecvTidBase + 4));
    EXPECT_EQ(event.at("args").at("bytes"), 3'000'000);
    max_queued_us = std::max(max_queued_us, event.at("args").at("queued_us").get<double>());
  }
  EXPECT_GT(max_queued_us, 0.0);
}

TEST(ChromeTrace, DrawsBlockingWaitsOnTheComputeThread) {
  const SimulationReport report = run({"1F1B", 4, 8, false});
  ASSERT_FALSE(report.timeline->comm_waits.empty());
  std::size_t waits = 0;
  for (const json& event : events_with_phase(trace_of(report), "X")) {
    if (event.at("cat") != "comm-wait") continue;
    ++waits;
    EXPECT_EQ(event.at("tid"), kComputeTid);
    EXPECT_EQ(event.at("name").get<std::string>().rfind("wait ", 0), 0u);
  }
  EXPECT_EQ(waits, report.timeline->comm_waits.size());
}

TEST(ChromeTrace, CountsActivationMemoryPerRank) {
  const SimulationReport report = run({"1F1B", 4, 8, true});
  std::vector<std::int64_t> peak(4, 0);
  std::size_t samples = 0;
  for (const json& event : events_with_phase(trace_of(report), "C")) {
    EXPECT_EQ(event.at("name"), "activation memory");
    const auto rank = event.at("pid").get<std::size_t>();
    peak[rank] = std::max(peak[rank], event.at("args").at("bytes").get<std::int64_t>());
    ++samples;
  }
  std::size_t expected_samples = 0;
  for (const auto& rank_samples : report.timeline->memory) expected_samples += rank_samples.size();
  EXPECT_EQ(samples, expected_samples);
  for (const RankReport& rank : report.ranks_detail) {
    EXPECT_EQ(peak[static_cast<std::size_t>(rank.rank)], rank.peak_activation_bytes);
  }
}

TEST(ChromeTrace, RejectsAReportWithoutTimeline) {
  SimulationReport report = run({"1F1B", 2, 2, true});
  report.timeline.reset();
  EXPECT_THROW(chrome_trace_json(report), InputError);
}

}  // namespace
}  // namespace pipeplan::sim
