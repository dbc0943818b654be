// The branch-and-bound schedule search against the zero-bubble heuristic
// on small pipelines: never slower (it covers every order the heuristic
// could make), every order it returns validates and replays on the engine
// at the cost it found, within the memory limit; and on hand-worked cases
// it reaches the known optimum.
#include "sim/search/exact_schedule_search.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "sim/validation.h"

namespace pipeplan::sim {
namespace {

constexpr double kNoBound = std::numeric_limits<double>::infinity();

ZeroBubbleSearchRequest uniform(int p, int m, double tf, double tb, double tw, double tcomm, int forwards_held) {
  ZeroBubbleSearchRequest request;
  request.microbatches = m;
  for (int stage = 0; stage < p; ++stage) request.costs.stages.push_back({tf, tb, tw, 1000, 400, 0, 0});
  request.costs.static_bytes.assign(static_cast<std::size_t>(p), 0);
  request.topology.intra_node.latency_s = tcomm;
  request.memory_limit_bytes = {forwards_held * 1000LL};
  return request;
}

TEST(ExactScheduleSearch, OneRankRunsEveryPassBackToBack) {
  // One rank never waits: F + I + W per micro-batch, whatever the order.
  const ExactSearchResult exact = search_exact_schedule(uniform(1, 3, 1.0, 2.0, 0.5, 0.0, 3), kNoBound, 1'000'000);
  EXPECT_TRUE(exact.proven);
  EXPECT_DOUBLE_EQ(exact.cost_s, 3 * 3.5);
}

TEST(ExactScheduleSearch, TwoRanksReachTheHandWorkedOptimum) {
  // p = 2, F = I = W = 1, no messages. Rank 0 starts with F0 at 0; its
  // first I needs rank 1's (F0 at 1, I0 at 2, so not before 3), and no W
  // comes before an I. With m = 2 it has only F1 for [1, 2) and waits
  // [2, 3): span 3m + 1 = 7. From m = 3 on, F2 fills that time, Ws fill
  // later waits, and both ranks run their 3m of work without a gap.
  for (int m = 2; m <= 4; ++m) {
    const ExactSearchResult exact = search_exact_schedule(uniform(2, m, 1, 1, 1, 0, 2 * m), kNoBound, 5'000'000);
    EXPECT_TRUE(exact.proven) << m;
    EXPECT_DOUBLE_EQ(exact.cost_s, m == 2 ? 7.0 : 3.0 * m) << m;
  }
}

TEST(ExactScheduleSearch, NeverSlowerThanTheHeuristicAndReplaysAsFound) {
  struct Case {
    int p, m;
    double tf, tb, tw, tcomm;
    int held;
  };
  const Case cases[] = {{2, 4, 1.0, 1.0, 0.5, 0.1, 2}, {3, 3, 1.0, 1.2, 0.7, 0.05, 3},
                        {3, 4, 1.0, 1.0, 1.0, 0.0, 2}, {3, 4, 1.3, 1.0, 0.6, 0.2, 6}};
  for (const Case& c : cases) {
    const ZeroBubbleSearchRequest request = uniform(c.p, c.m, c.tf, c.tb, c.tw, c.tcomm, c.held);
    const SearchedSchedule heuristic = search_zero_bubble(request);
    const ExactSearchResult exact = search_exact_schedule(request, kNoBound, 20'000'000);
    const std::string where = fmt::format("p{} m{}", c.p, c.m);
    ASSERT_TRUE(exact.proven) << where;
    EXPECT_LE(exact.cost_s, heuristic.report.cost_s * (1 + 1e-12)) << where;
    EXPECT_NO_THROW(validate_schedule(exact.schedule)) << where;
    const SimulationReport replay = simulate(exact.schedule, request.costs, request.topology);
    EXPECT_NEAR(replay.cost_s, exact.cost_s, 1e-9) << where;
    for (const RankReport& rank : replay.ranks_detail) {
      EXPECT_LE(rank.peak_activation_bytes, request.memory_limit_bytes[0]) << where;
    }
  }
}

TEST(ExactScheduleSearch, ABoundNothingBeatsLeavesTheScheduleEmpty) {
  const ZeroBubbleSearchRequest request = uniform(2, 2, 1, 1, 1, 0, 4);
  const ExactSearchResult exact = search_exact_schedule(request, 7.0, 1'000'000);  // 7 is optimal (above)
  EXPECT_TRUE(exact.proven);
  EXPECT_EQ(exact.schedule.ranks, 0);
}

}  // namespace
}  // namespace pipeplan::sim
