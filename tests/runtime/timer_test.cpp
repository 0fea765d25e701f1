// Tests runtime/timer and sleep: timers fire in order and never early.
#include "runtime/timer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"

#include "tests/runtime/test_scale.hpp"

namespace weft::rt {
namespace {

TEST(TimerHeap, FiresInDeadlineOrderAndOnlyWhenDue) {
  TimerHeap heap;
  std::vector<int> fired;
  struct Arg {
    std::vector<int>* out;
    int id;
  };
  std::vector<TimerEntry> entries(100);
  std::vector<Arg> args(100);
  std::mt19937 rng(7);
  for (int i = 0; i < 100; ++i) {
    args[i] = {&fired, i};
    entries[i].deadline_ns = 1000 + (rng() % 50) * 10;
    entries[i].on_fire = [](void* a) {
      auto* arg = static_cast<Arg*>(a);
      arg->out->push_back(arg->id);
    };
    entries[i].arg = &args[i];
    heap.add(&entries[i]);
  }
  EXPECT_EQ(heap.fire_due(999), 0u);
  EXPECT_EQ(heap.size(), 100u);
  heap.fire_due(1200);
  for (int id : fired) EXPECT_LE(entries[id].deadline_ns, 1200);
  heap.fire_due(100000);
  ASSERT_EQ(fired.size(), 100u);
  for (std::size_t i = 1; i < fired.size(); ++i) {
    const TimerEntry& a = entries[fired[i - 1]];
    const TimerEntry& b = entries[fired[i]];
    EXPECT_TRUE(a.deadline_ns < b.deadline_ns ||
                (a.deadline_ns == b.deadline_ns && fired[i - 1] < fired[i]));
  }
  EXPECT_EQ(heap.earliest(), TimerHeap::kNone);
}

TEST(TimerHeap, CancelRemovesOnlyUnfired) {
  TimerHeap heap;
  int count = 0;
  TimerEntry a, b, c;
  for (auto* e : {&a, &b, &c}) {
    e->on_fire = [](void* p) { ++*static_cast<int*>(p); };
    e->arg = &count;
  }
  a.deadline_ns = 10;
  b.deadline_ns = 20;
  c.deadline_ns = 30;
  heap.add(&a);
  heap.add(&b);
  heap.add(&c);
  EXPECT_TRUE(TimerHeap::cancel(&b));
  EXPECT_FALSE(TimerHeap::cancel(&b));
  EXPECT_EQ(heap.earliest(), 10);
  heap.fire_due(15);
  EXPECT_FALSE(TimerHeap::cancel(&a));
  heap.fire_due(100);
  EXPECT_EQ(count, 2);
}

TEST(Sleep, NeverWakesEarly) {
  RuntimeOptions o;
  o.processors = 2;
  Runtime rt(o);
  std::atomic<int> early{0};
  rt.run([&] {
    std::vector<FiberHandle> hs;
    for (int i = 0; i < 200; ++i) {
      hs.push_back(spawn([&, i] {
        auto d = std::chrono::microseconds(100 + (i * 37) % 3000);
        auto start = now();
        sleep_for(d);
        if (now() - start < d) early.fetch_add(1);
      }));
    }
    for (auto& h : hs) h.join();
  });
  EXPECT_EQ(early.load(), 0);
}

TEST(Sleep, SleepersWakeInDeadlineOrder) {
  RuntimeOptions o;
  o.processors = 1;
  Runtime rt(o);
  std::vector<int> order;
  rt.run([&] {
    // Absolute deadlines, far enough ahead that every timer is set before the first is due
    // even under a sanitizer, so the order is the deadlines' and not the spawns'.
    TimePoint base = now() + std::chrono::milliseconds(200);
    std::vector<FiberHandle> hs;
    for (int i : {5, 1, 4, 2, 3}) {
      hs.push_back(spawn([&, i] {
        sleep_until(base + std::chrono::milliseconds(i));
        order.push_back(i);
      }));
    }
    for (auto& h : hs) h.join();
  });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
}

// The timer-cancel race: fire_due has taken an entry off the heap and runs its callback
// while another thread cancels it. cancel() must not return before the callback has, or the
// entry's owner frees a frame the callback still writes to. The callback is held open until
// cancel() reports (through the test seam) that it is waiting, or until cancel() returned,
// which is the bug; both sides are bounded, no timing decides the outcome.
TEST(TimerHeap, CancelWaitsForACallbackInProgress) {
  struct State {
    std::atomic<bool> entered{false};
    std::atomic<bool> cancel_waiting{false};
    std::atomic<bool> cancel_returned{false};
    std::atomic<bool> returned_while_firing{false};
    std::atomic<bool> gave_up{false};
  };
  static State* state = nullptr;
  State st;
  state = &st;
  TimerHeap::on_cancel_wait = [](TimerEntry*) { state->cancel_waiting.store(true); };
  TimerHeap heap;
  TimerEntry e;
  e.deadline_ns = 1;
  e.arg = &st;
  e.on_fire = [](void* a) {
    auto* s = static_cast<State*>(a);
    s->entered.store(true);
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!s->cancel_waiting.load() && !s->cancel_returned.load()) {
      if (std::chrono::steady_clock::now() > limit) {
        s->gave_up.store(true);
        break;
      }
      std::this_thread::yield();
    }
    if (s->cancel_returned.load()) s->returned_while_firing.store(true);
  };
  heap.add(&e);
  bool removed = true;
  std::thread canceller([&] {
    while (!st.entered.load()) std::this_thread::yield();
    removed = TimerHeap::cancel(&e);
    st.cancel_returned.store(true);
  });
  EXPECT_EQ(heap.fire_due(10), 1u);
  canceller.join();
  TimerHeap::on_cancel_wait = nullptr;
  EXPECT_FALSE(removed);
  EXPECT_FALSE(st.returned_while_firing.load()) << "cancel() returned while on_fire ran";
  EXPECT_TRUE(st.cancel_waiting.load());
  EXPECT_FALSE(st.gave_up.load());
  EXPECT_FALSE(e.firing.load());
}

// Timed waits on fibers racing their wakers across processors: a released permit and the
// deadline arrive together, so either side may win; every waiter's frame dies right after.
// Under TSan and ASan a callback that outlived cancel() shows as a race or a use after return.
TEST(TimedWait, DeadlineRacingAWakerLeavesNothingBehind) {
  RuntimeOptions o;
  o.processors = 2;
  Runtime rt(o);
  int rounds = scaled(2000);
  std::atomic<int> granted{0}, timed_out{0};
  rt.run([&] {
    for (int i = 0; i < rounds; ++i) {
      Semaphore sem(0);
      auto deadline = now() + std::chrono::microseconds(20);
      auto releaser = spawn([&] {
        while (now() < deadline) cpu_relax();
        sem.release();
      });
      if (sem.try_acquire_until(deadline)) {
        granted.fetch_add(1);
      } else {
        timed_out.fetch_add(1);
      }
      releaser.join();
      sleep_for(std::chrono::microseconds(i % 3));  // the frames of both waits get reused
    }
  });
  EXPECT_EQ(granted.load() + timed_out.load(), rounds);
}

}  // namespace
}  // namespace weft::rt
