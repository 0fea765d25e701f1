// Tests runtime/waiter: a wake before the wait is not lost; of racing wakers exactly one
// wins; a timed wait times out no earlier than its deadline and its timer then owns the claim
// (a late wake loses); a wake from a plain thread reaches a fiber; WaitList keeps FIFO order.
#include "runtime/waiter.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/scheduler.hpp"

#include "tests/runtime/test_scale.hpp"

namespace weft::rt {
namespace {

using namespace std::chrono_literals;

TEST(WaiterTest, AWakeBeforeTheWaitIsNotLost) {
  Runtime rt(opts(1));
  rt.run([] {
    Waiter w;
    EXPECT_TRUE(w.wake());
    w.wait();  // returns at once
    EXPECT_TRUE(w.claimed());
  });
}

TEST(WaiterTest, OfRacingWakersExactlyOneWins) {
  Runtime rt(opts(2));
  rt.run([] {
    for (int round = 0; round < scaled(200); ++round) {
      Waiter w;
      std::atomic<int> winners{0};
      std::vector<FiberHandle> wakers;
      for (int i = 0; i < 4; ++i) {
        wakers.push_back(spawn([&] {
          if (w.wake(false)) winners.fetch_add(1);
        }));
      }
      w.wait();
      for (auto& h : wakers) h.join();
      EXPECT_EQ(winners.load(), 1);
    }
  });
}

TEST(WaiterTest, ATimedWaitTimesOutNeverEarlyAndKeepsTheClaim) {
  Runtime rt(opts(1));
  rt.run([] {
    Waiter w;
    TimePoint start = now();
    EXPECT_FALSE(w.wait_until(start + 20ms));
    EXPECT_GE(now() - start, 20ms);
    EXPECT_FALSE(w.wake());  // the timer claimed it
  });
}

TEST(WaiterTest, AWakeBeforeTheDeadlineEndsATimedWait) {
  Runtime rt(opts(2));
  rt.run([] {
    Waiter w;
    auto waker = spawn([&] {
      sleep_for(5ms);
      w.wake();
    });
    EXPECT_TRUE(w.wait_until(now() + 10s));
    waker.join();
  });
}

TEST(WaiterTest, APlainThreadWakesAFiber) {
  Runtime rt(opts(1));
  rt.run([] {
    Waiter w;
    std::thread t([&] {
      std::this_thread::sleep_for(5ms);
      w.wake(false);
    });
    w.wait();
    t.join();
  });
}

TEST(WaitListTest, FifoWithFrontAndRemove) {
  Waiter a(nullptr), b(nullptr), c(nullptr);
  WaitList l;
  l.push_back(&b);
  l.push_back(&c);
  l.push_front(&a);
  EXPECT_EQ(l.size(), 3u);
  l.remove(&b);
  EXPECT_FALSE(b.linked);
  WaitList all = l.take_all();
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(all.pop_front(), &a);
  EXPECT_EQ(all.pop_front(), &c);
  EXPECT_EQ(all.pop_front(), nullptr);
}

}  // namespace
}  // namespace weft::rt
