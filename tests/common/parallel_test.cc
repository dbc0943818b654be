// The shared thread pool: every index runs once, and an exception thrown by
// a body reaches the caller (never std::terminate), the same one whatever
// the thread count.
#include "common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"

namespace {

using pipeplan::parallel_for;

TEST(ParallelFor, RunsEveryIndexOnce) {
  for (int threads : {1, 2, 7}) {
    std::vector<std::atomic<int>> seen(1000);
    parallel_for(seen.size(), threads, [&](std::size_t i) { ++seen[i]; });
    for (const auto& count : seen) EXPECT_EQ(count.load(), 1) << threads;
  }
}

TEST(ParallelFor, NoWorkIsNoCall) {
  int calls = 0;
  parallel_for(0, 4, [&](std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, CarriesTheLowestFailingIndexsExceptionToTheCaller) {
  for (int threads : {1, 2, 3, 8}) {
    try {
      parallel_for(200, threads, [](std::size_t i) {
        if (i == 37) throw pipeplan::InputError("bad 37");
        if (i == 150) throw std::runtime_error("bad 150");
      });
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const pipeplan::InputError& error) {
      EXPECT_EQ(std::string(error.what()), "bad 37") << threads;
    }
  }
}

TEST(ParallelFor, SkipsWorkAfterTheFailure) {
  std::atomic<std::size_t> highest{0};
  EXPECT_THROW(parallel_for(100000, 1,
                            [&](std::size_t i) {
                              highest = i;
                              if (i == 10) throw pipeplan::InputError("stop");
                            }),
               pipeplan::InputError);
  EXPECT_EQ(highest.load(), 10u);
}

TEST(PoolSize, NeverMoreThreadsThanItemsNorFewerThanOne) {
  EXPECT_EQ(pipeplan::pool_size(8, 3), 3u);
  EXPECT_EQ(pipeplan::pool_size(2, 100), 2u);
  EXPECT_EQ(pipeplan::pool_size(4, 0), 1u);
  EXPECT_GE(pipeplan::pool_size(0, 100), 1u);
}

}  // namespace
