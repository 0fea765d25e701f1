// Tests the sync primitives (mutex, semaphore, condition_variable, latch, channel) under
// contention across processors: no lost wake-up, exact totals, timeouts never early.
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/channel.hpp"
#include "runtime/condition_variable.hpp"
#include "runtime/latch.hpp"
#include "runtime/mutex.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"

#include "tests/runtime/test_scale.hpp"

namespace weft::rt {
namespace {

using namespace std::chrono_literals;

// Spawns n fibers running fn(i) and joins them all.
template <typename F>
void run_fibers(int n, F fn) {
  std::vector<FiberHandle> hs;
  for (int i = 0; i < n; ++i) hs.push_back(spawn([&fn, i] { fn(i); }));
  for (auto& h : hs) h.join();
}

class MutexTest : public ::testing::TestWithParam<Duration> {};

TEST_P(MutexTest, CounterReachesExactTotalUnderContention) {
  Runtime rt(opts(2));
  Mutex m(GetParam());
  uint64_t counter = 0;  // plain: only the mutex protects it
  constexpr int kFibers = 8;
  constexpr int kOps = 150'000;  // 1.2M lock/unlock pairs in all
  rt.run([&] {
    run_fibers(kFibers, [&](int) {
      for (int i = 0; i < kOps; ++i) {
        std::lock_guard g(m);
        ++counter;
        if (i % 1000 == 0) yield();  // sometimes hold it across a switch
      }
    });
  });
  EXPECT_EQ(counter, uint64_t{kFibers} * kOps);
}

INSTANTIATE_TEST_SUITE_P(Modes, MutexTest,
                         ::testing::Values(Duration::zero(), Duration(std::chrono::milliseconds(1)),
                                           Duration::max()));

TEST(Mutex, HandOffServesWaitersInArrivalOrder) {
  Runtime rt(opts(1));
  Mutex m(Duration::zero());  // strict hand-off: FIFO
  std::vector<int> order;
  rt.run([&] {
    m.lock();
    std::vector<FiberHandle> hs;
    for (int i = 0; i < 5; ++i) {
      hs.push_back(spawn([&, i] {
        m.lock();
        order.push_back(i);
        m.unlock();
      }));
      yield();  // let fiber i queue up before the next one
    }
    m.unlock();
    for (auto& h : hs) h.join();
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Mutex, TryLock) {
  Runtime rt(opts(1));
  rt.run([&] {
    Mutex m;
    EXPECT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock());
    m.unlock();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
  });
}

TEST(Semaphore, PermitsAreConserved) {
  Runtime rt(opts(2));
  Semaphore sem(3);
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  rt.run([&] {
    run_fibers(32, [&](int) {
      for (int i = 0; i < 500; ++i) {
        sem.acquire();
        int now_inside = inside.fetch_add(1) + 1;
        int prev = max_inside.load();
        while (now_inside > prev && !max_inside.compare_exchange_weak(prev, now_inside)) {
        }
        if (i % 7 == 0) yield();
        inside.fetch_sub(1);
        sem.release();
      }
    });
  });
  EXPECT_LE(max_inside.load(), 3);
  EXPECT_EQ(sem.available(), 3);
}

TEST(Semaphore, TimedAcquireTimesOutNeverEarly) {
  Runtime rt(opts(2));
  rt.run([&] {
    Semaphore sem(0);
    auto start = now();
    EXPECT_FALSE(sem.try_acquire_for(5ms));
    EXPECT_GE(now() - start, 5ms);
    // A permit released before the deadline is taken.
    auto h = spawn([&] {
      sleep_for(1ms);
      sem.release();
    });
    EXPECT_TRUE(sem.try_acquire_for(10s));
    h.join();
    EXPECT_EQ(sem.available(), 0);
  });
}

TEST(Semaphore, TimeoutsRacingReleasesLoseNoPermit) {
  Runtime rt(opts(2));
  Semaphore sem(0);
  std::atomic<int> got{0};
  constexpr int kWaiters = 200;
  rt.run([&] {
    std::vector<FiberHandle> hs;
    for (int i = 0; i < kWaiters; ++i) {
      hs.push_back(spawn([&, i] {
        if (sem.try_acquire_for(std::chrono::microseconds(50 + i * 10))) got.fetch_add(1);
      }));
    }
    for (int i = 0; i < kWaiters / 2; ++i) {
      sem.release();
      if (i % 10 == 0) sleep_for(100us);
    }
    for (auto& h : hs) h.join();
  });
  // Every permit went to exactly one waiter or stayed in the semaphore.
  EXPECT_EQ(got.load() + sem.available(), kWaiters / 2);
}

TEST(ConditionVariable, ProducerConsumerLosesNoWakeUp) {
  Runtime rt(opts(2));
  Mutex m;
  ConditionVariable cv;
  std::vector<int> queue;
  int consumed = 0;
  long sum = 0;
  constexpr int kItems = 50'000;
  rt.run([&] {
    auto consumer = [&](int) {
      while (true) {
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return !queue.empty(); });
        int v = queue.back();
        queue.pop_back();
        if (v < 0) return;
        ++consumed;
        sum += v;
      }
    };
    std::vector<FiberHandle> cs;
    for (int i = 0; i < 4; ++i) cs.push_back(spawn([&, i] { consumer(i); }));
    for (int i = 1; i <= kItems; ++i) {
      {
        std::lock_guard g(m);
        queue.insert(queue.begin(), i);
      }
      cv.notify_one();
      if (i % 64 == 0) yield();
    }
    {
      std::lock_guard g(m);
      for (int i = 0; i < 4; ++i) queue.insert(queue.begin(), -1);
    }
    cv.notify_all();
    for (auto& c : cs) c.join();
  });
  EXPECT_EQ(consumed, kItems);
  EXPECT_EQ(sum, long{kItems} * (kItems + 1) / 2);
}

TEST(ConditionVariable, WaitUntilTimesOutNeverEarly) {
  Runtime rt(opts(1));
  rt.run([&] {
    Mutex m;
    ConditionVariable cv;
    std::unique_lock lk(m);
    auto start = now();
    EXPECT_EQ(cv.wait_until(lk, start + 3ms), WaitStatus::timeout);
    EXPECT_GE(now() - start, 3ms);
    bool flag = false;
    auto h = spawn([&] {
      std::lock_guard g(m);
      flag = true;
      cv.notify_one();
    });
    EXPECT_TRUE(cv.wait_for(lk, 10s, [&] { return flag; }));
    lk.unlock();
    h.join();
  });
}

// Duration::max() means no time limit: now() + d must saturate, not wrap into the past
// (which timed the waits out at once).
TEST(Semaphore, TryAcquireForDurationMaxWaitsForARelease) {
  Runtime rt(opts(1));
  rt.run([&] {
    Semaphore sem(0);
    auto releaser = spawn([&] {
      sleep_for(5ms);
      sem.release();
    });
    EXPECT_TRUE(sem.try_acquire_for(Duration::max()));
    releaser.join();
  });
}

TEST(ConditionVariable, WaitForDurationMaxWaitsForANotify) {
  Runtime rt(opts(1));
  rt.run([&] {
    Mutex m;
    ConditionVariable cv;
    bool flag = false;
    auto notifier = spawn([&] {
      sleep_for(5ms);
      std::lock_guard g(m);
      flag = true;
      cv.notify_one();
    });
    std::unique_lock lk(m);
    EXPECT_TRUE(cv.wait_for(lk, Duration::max(), [&] { return flag; }));
    lk.unlock();
    notifier.join();
  });
}

TEST(Latch, OpensForAllWaiters) {
  Runtime rt(opts(2));
  Latch latch(10);
  std::atomic<int> passed{0};
  rt.run([&] {
    std::vector<FiberHandle> waiters;
    for (int i = 0; i < 5; ++i) {
      waiters.push_back(spawn([&] {
        latch.wait();
        passed.fetch_add(1);
      }));
    }
    run_fibers(10, [&](int) { latch.count_down(); });
    for (auto& w : waiters) w.join();
    EXPECT_TRUE(latch.try_wait());
  });
  EXPECT_EQ(passed.load(), 5);
}

TEST(WaitGroup, WaitsForEveryDone) {
  Runtime rt(opts(2));
  std::atomic<int> finished{0};
  rt.run([&] {
    WaitGroup wg;
    for (int round = 0; round < 3; ++round) {
      wg.add(100);
      for (int i = 0; i < 100; ++i) {
        spawn([&, i] {
          sleep_for(std::chrono::microseconds(10 * (i % 10)));
          finished.fetch_add(1);
          wg.done();
        }).detach();
      }
      wg.wait();
      EXPECT_EQ(finished.load(), 100 * (round + 1));
      EXPECT_EQ(wg.count(), 0);
    }
  });
}

TEST(Channel, MpmcDeliversEveryValueExactlyOnce) {
  Runtime rt(opts(2));
  Channel<int> ch(16);
  constexpr int kProducers = 4, kPerProducer = 20'000;
  std::atomic<long> sum{0};
  std::atomic<int> count{0};
  rt.run([&] {
    std::vector<FiberHandle> consumers;
    for (int c = 0; c < 3; ++c) {
      consumers.push_back(spawn([&] {
        while (auto v = ch.recv()) {
          sum.fetch_add(*v);
          count.fetch_add(1);
        }
      }));
    }
    run_fibers(kProducers, [&](int p) {
      for (int i = 0; i < kPerProducer; ++i) EXPECT_TRUE(ch.send(p * kPerProducer + i));
    });
    ch.close();
    for (auto& c : consumers) c.join();
  });
  long n = long{kProducers} * kPerProducer;
  EXPECT_EQ(count.load(), n);
  EXPECT_EQ(sum.load(), n * (n - 1) / 2);
}

TEST(Channel, SingleProducerOrderIsFifo) {
  Runtime rt(opts(2));
  Channel<int> ch(4);
  std::vector<int> got;
  rt.run([&] {
    auto consumer = spawn([&] {
      while (auto v = ch.recv()) got.push_back(*v);
    });
    for (int i = 0; i < 1000; ++i) ch.send(i);
    ch.close();
    consumer.join();
  });
  std::vector<int> want(1000);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(got, want);
}

TEST(Channel, CloseFailsSendersAndDrainsReceivers) {
  Runtime rt(opts(1));
  rt.run([&] {
    Channel<int> ch(1);
    EXPECT_TRUE(ch.send(1));
    int v = 2;
    EXPECT_FALSE(ch.try_send(v));
    auto blocked = spawn([&] { EXPECT_TRUE(ch.send(3)); });  // moved in by try_recv
    auto blocked2 = spawn([&] { EXPECT_FALSE(ch.send(4)); });
    yield();
    EXPECT_EQ(ch.try_recv(), 1);  // makes room: sender 3 moves in
    ch.close();
    blocked.join();
    blocked2.join();
    EXPECT_EQ(ch.recv(), 3);
    EXPECT_EQ(ch.recv(), std::nullopt);
    EXPECT_FALSE(ch.send(5));
  });
}

// A fiber woken through a sync object may destroy it at once (a WaitGroup on its stack, a
// one-shot Semaphore), so the waker must touch nothing of the object after the wake-up.
// Each round builds the object in a buffer; a "destroyer" fiber waits on it first, then
// `others` fibers wait behind it; the main fiber signals once, waking all of them, the
// destroyer first. The destroyer (on the other processor, which spins rather than sleeps)
// destroys the object and poisons the buffer, as stack reuse would, while the waker is still
// busy waking the others: a waker that still reads the object's wait list or lock crashes
// on the poison (ASan and TSan report it too). Wakes under the object's lock crashed the
// 10k-connection echo test this way.
template <typename T, typename Signal, typename Wait, typename... Args>
void destroy_right_after_wake(int others, Signal signal, Wait wait, Args... args) {
  RuntimeOptions o = opts(2);
  o.spin = 100000;  // the destroyer's processor picks it up at once
  Runtime rt(o);
  rt.run([&] {
    for (int round = 0; round < scaled(1000); ++round) {
      alignas(T) unsigned char storage[sizeof(T)];
      T* obj = new (storage) T(args...);
      std::atomic<bool> destroyed{false};
      spawn([&] {
        wait(*obj);
        obj->~T();
        std::memset(storage, 0xA5, sizeof storage);
        destroyed.store(true, std::memory_order_release);
      }).detach();
      while (obj->waiting() < 1) yield();  // the destroyer is first in the wait list
      WaitGroup back;
      back.add(others);
      for (int i = 0; i < others; ++i) {
        spawn([&] {
          wait(*obj);  // returns without touching *obj again
          back.done();
        }).detach();
      }
      while (obj->waiting() < static_cast<std::size_t>(others) + 1) yield();
      signal(*obj);
      back.wait();
      while (!destroyed.load(std::memory_order_acquire)) yield();
    }
  });
}

TEST(SyncLifetime, WaitGroupMayBeDestroyedRightAfterWait) {
  struct OneToDo : WaitGroup {
    OneToDo() { add(1); }
  };
  destroy_right_after_wake<OneToDo>(
      32, [](OneToDo& wg) { wg.done(); }, [](OneToDo& wg) { wg.wait(); });
}

TEST(SyncLifetime, LatchMayBeDestroyedRightAfterWait) {
  destroy_right_after_wake<Latch>(
      32, [](Latch& l) { l.count_down(); }, [](Latch& l) { l.wait(); }, int64_t{1});
}

TEST(SyncLifetime, SemaphoreMayBeDestroyedRightAfterAcquire) {
  // release(n) wakes up to 8 waiters after one lock (see Semaphore::release).
  destroy_right_after_wake<Semaphore>(
      7, [](Semaphore& s) { s.release(8); }, [](Semaphore& s) { s.acquire(); }, int64_t{0});
}

// The lock a condition variable's waiter releases and retakes: none here, since only the
// condition variable's own wait list is under test.
struct NoLock {
  void lock() {}
  void unlock() {}
};

TEST(SyncLifetime, ConditionVariableMayBeDestroyedRightAfterNotifyAll) {
  destroy_right_after_wake<ConditionVariable>(
      32, [](ConditionVariable& cv) { cv.notify_all(); },
      [](ConditionVariable& cv) {
        NoLock l;
        cv.wait(l);
      });
}

// One waiter: the waker's last touch is the release of the list's lock, a store into the
// poisoned buffer that only TSan sees (the tsan stage runs this).
TEST(SyncLifetime, ConditionVariableMayBeDestroyedRightAfterNotifyOne) {
  destroy_right_after_wake<ConditionVariable>(
      0, [](ConditionVariable& cv) { cv.notify_one(); },
      [](ConditionVariable& cv) {
        NoLock l;
        cv.wait(l);
      });
}

TEST(SyncLifetime, ChannelMayBeDestroyedRightAfterClose) {
  destroy_right_after_wake<Channel<int>>(
      32, [](Channel<int>& c) { c.close(); }, [](Channel<int>& c) { EXPECT_FALSE(c.recv()); },
      std::size_t{1});
}

}  // namespace
}  // namespace weft::rt
