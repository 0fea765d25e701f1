// Tests runtime/timer and sleep: timers fire in order and never early.
#include "runtime/timer.hpp"

#include <algorithm>
#include <atomic>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/scheduler.hpp"

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
    auto a = entries[fired[i - 1]], b = entries[fired[i]];
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

}  // namespace
}  // namespace weft::rt
