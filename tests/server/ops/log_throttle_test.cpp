// Tests server/ops/log_throttle.hpp: the per-second budget, the count of dropped lines handed to
// the next line let through, a new second's fresh budget, and many threads sharing one site.
#include "server/ops/log_throttle.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(LogThrottle, LetsTheBudgetThroughThenCountsTheRest) {
  LogThrottle t(3);
  EXPECT_EQ(t.admit_at(100), 1u);
  EXPECT_EQ(t.admit_at(100), 1u);
  EXPECT_EQ(t.admit_at(100), 1u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.admit_at(100), 0u);
  // A new second: the first line carries the five dropped ones.
  EXPECT_EQ(t.admit_at(101), 6u);
  EXPECT_EQ(t.admit_at(101), 1u);
}

TEST(LogThrottle, QuietSecondsCostNothing) {
  LogThrottle t(1);
  EXPECT_EQ(t.admit_at(5), 1u);
  EXPECT_EQ(t.admit_at(9), 1u);  // nothing dropped in between
  EXPECT_EQ(t.admit_at(9), 0u);
  EXPECT_EQ(t.admit_at(30), 2u);
}

TEST(LogThrottle, ThreadsShareOneBudget) {
  LogThrottle t(10);
  std::atomic<std::uint64_t> passed{0}, accounted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 1000; ++j) {
        const std::uint64_t n = t.admit_at(7);
        if (n != 0) {
          passed.fetch_add(1);
          accounted.fetch_add(n);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(passed.load(), 10u);  // one window: exactly the budget
  // Every line is either written or counted in the next written one.
  EXPECT_EQ(accounted.load() + t.admit_at(8) - 1, 4000u);
}

}  // namespace
}  // namespace weft::http
