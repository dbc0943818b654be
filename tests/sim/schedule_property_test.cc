// Property grid: every generator x p in 1..16 x m in 1..64 x v. Each
// schedule either is refused with a precondition error or validates, and
// its replay runs every compute action exactly once, never two at a time
// on one rank, each after its inputs arrived; when no transfer had to queue
// for its link, the makespan equals the dependency graph's critical path.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/error.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

constexpr double kTf = 1.0, kTb = 1.5, kTw = 0.5, kComm = 0.1;
constexpr double kEps = 1e-9;

struct Key {
  int stage, mb;
  OpKind kind;
  auto operator<=>(const Key&) const = default;
};

void check_replay(const Schedule& schedule, const SimulationReport& report, const std::string& label) {
  ASSERT_TRUE(report.timeline.has_value());
  const auto& computes = report.timeline->computes;
  ASSERT_EQ(computes.size(), schedule.compute_action_count()) << label;
  std::map<Key, ComputeRecord> by_key;
  for (const ComputeRecord& record : computes) {
    const Key key{record.action.stage, record.action.microbatch, record.action.kind};
    ASSERT_TRUE(by_key.emplace(key, record).second) << label << ": ran twice " << to_string(record.action);
  }
  // One computation at a time per rank.
  std::vector<std::vector<ComputeRecord>> per_rank(static_cast<std::size_t>(schedule.ranks));
  for (const ComputeRecord& record : computes) per_rank[static_cast<std::size_t>(record.rank)].push_back(record);
  for (auto& records : per_rank) {
    std::sort(records.begin(), records.end(), [](auto& a, auto& b) { return a.start_s < b.start_s; });
    for (std::size_t i = 1; i < records.size(); ++i) {
      ASSERT_GE(records[i].start_s, records[i - 1].end_s - kEps) << label << ": overlap on rank " << records[i].rank;
    }
  }
  // Inputs before use: activation from stage - 1, gradient from stage + 1, W after I.
  auto end_of = [&](int stage, int mb, std::initializer_list<OpKind> kinds) {
    for (OpKind kind : kinds) {
      const auto it = by_key.find({stage, mb, kind});
      if (it != by_key.end()) return it->second.end_s;
    }
    ADD_FAILURE() << label << ": missing producer " << stage << "/" << mb;
    return 0.0;
  };
  for (const ComputeRecord& r : computes) {
    const int s = r.action.stage, mb = r.action.microbatch;
    const bool cross_prev = s > 0 && schedule.rank_of(s - 1) != r.rank;
    const bool cross_next = s + 1 < schedule.stages && schedule.rank_of(s + 1) != r.rank;
    if (r.action.kind == OpKind::kForward && s > 0) {
      EXPECT_GE(r.start_s, end_of(s - 1, mb, {OpKind::kForward}) + (cross_prev ? kComm : 0) - kEps) << label;
    }
    if (produces_input_grad(r.action.kind)) {
      EXPECT_GE(r.start_s, end_of(s, mb, {OpKind::kForward}) - kEps) << label;
      if (s + 1 < schedule.stages) {
        const double grad = end_of(s + 1, mb, {OpKind::kBackward, OpKind::kBackwardInput});
        EXPECT_GE(r.start_s, grad + (cross_next ? kComm : 0) - kEps) << label;
      }
    }
    if (r.action.kind == OpKind::kBackwardWeight) {
      EXPECT_GE(r.start_s, end_of(s, mb, {OpKind::kBackwardInput}) - kEps) << label;
    }
  }
  // The critical path assumes uncontended links: equal unless a transfer queued.
  const bool queued = std::any_of(report.timeline->transfers.begin(), report.timeline->transfers.end(),
                                  [](const TransferRecord& t) { return t.start_s > t.issue_s + kEps; });
  if (queued) {
    EXPECT_GE(report.makespan_s, report.critical_path_s - 1e-6) << label;
    return;
  }
  EXPECT_NEAR(report.makespan_s, report.critical_path_s, 1e-6) << label;
  // Without queueing, the replay without the event queue gives the same times.
  SimulationOptions fast;
  fast.uncontended_links = true;
  const SimulationReport replayed = testing::simulate_uniform(schedule, {kTf, kTb, kTw, kComm}, fast);
  EXPECT_NEAR(replayed.makespan_s, report.makespan_s, 1e-9) << label;
  EXPECT_NEAR(replayed.cost_s, report.cost_s, 1e-9) << label;
  for (std::size_t rank = 0; rank < report.ranks_detail.size(); ++rank) {
    EXPECT_NEAR(replayed.ranks_detail[rank].span_s, report.ranks_detail[rank].span_s, 1e-9) << label;
    EXPECT_EQ(replayed.ranks_detail[rank].peak_inflight_chunks, report.ranks_detail[rank].peak_inflight_chunks);
  }
}

class ScheduleGrid : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ScheduleGrid, EveryScheduleValidatesOrIsRefused) {
  const auto& [name, p] = GetParam();
  const ScheduleFamily& family = find_schedule_family(name);
  const std::vector<int> virtuals =
      family.default_virtual_stages == 1 ? std::vector<int>{1} : std::vector<int>{1, 2, 3, 4};
  int simulated = 0;
  for (int m = 1; m <= 64; ++m) {
    for (int v : virtuals) {
      const std::string label = name + " p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" + std::to_string(v);
      Schedule schedule;
      try {
        schedule = testing::family_schedule(name, {p, m, v, 0});
      } catch (const InputError& refused) {
        EXPECT_NE(std::string(refused.what()), "") << label;
        continue;
      }
      SimulationOptions options;
      options.record_timeline = true;
      const SimulationReport report = testing::simulate_uniform(schedule, {kTf, kTb, kTw, kComm}, options);
      check_replay(schedule, report, label);
      ++simulated;
    }
  }
  EXPECT_GT(simulated, 0) << name << " p=" << p << ": nothing generated";
}

// Megatron's micro-batch group size: every accepted (p, m, v, g) replays.
TEST(ScheduleGridGroups, InterleavedGroupSizesValidateOrAreRefused) {
  int simulated = 0;
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 32; ++m) {
      for (int v : {2, 3}) {
        for (int g : {p, p + 1, 2 * p, m}) {
          const std::string label = "Interleaved1F1B p=" + std::to_string(p) + " m=" + std::to_string(m) +
                                    " v=" + std::to_string(v) + " g=" + std::to_string(g);
          Schedule schedule;
          try {
            schedule = generate_schedule("Interleaved1F1B", {p, m, v, g});
          } catch (const InputError&) {
            continue;
          }
          SimulationOptions options;
          options.record_timeline = true;
          check_replay(schedule, testing::simulate_uniform(schedule, {kTf, kTb, kTw, kComm}, options), label);
          ++simulated;
        }
      }
    }
  }
  EXPECT_GT(simulated, 500);
}

std::vector<std::string> family_names() {
  std::vector<std::string> names;
  for (const ScheduleFamily& family : schedule_families()) names.emplace_back(family.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, ScheduleGrid,
                         ::testing::Combine(::testing::ValuesIn(family_names()), ::testing::Range(1, 17)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) + "_p" + std::to_string(std::get<1>(info.param));
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace pipeplan::sim
