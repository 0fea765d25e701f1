// Tests runtime/scheduler and runtime/fiber: spawn/join, stealing, fairness, park/unpark,
// exceptions, shutdown.
#include "runtime/scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/fiber.hpp"
#include "runtime/semaphore.hpp"

#include "tests/runtime/test_scale.hpp"

namespace weft::rt {
namespace {

TEST(Scheduler, MainFiberRunsAndRuntimeStops) {
  Runtime rt(opts(2));
  bool ran = false;
  rt.run([&] {
    ran = true;
    EXPECT_TRUE(in_fiber());
    EXPECT_STREQ(current_fiber()->fiber_name(), "main");
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(rt.leftover_fibers(), 0u);
  EXPECT_FALSE(in_fiber());
}

TEST(Scheduler, SpawnAndJoinHundredThousandFibers) {
  for (unsigned procs : {1u, 2u}) {
    Runtime rt(opts(procs));
    std::atomic<uint64_t> sum{0};
    rt.run([&] {
      std::vector<FiberHandle> hs;
      const uint64_t n = static_cast<uint64_t>(scaled(100'000));
      hs.reserve(n);
      for (uint64_t i = 0; i < n; ++i) {
        hs.push_back(spawn([&sum, i] { sum.fetch_add(i, std::memory_order_relaxed); }));
      }
      for (auto& h : hs) h.join();
    });
    const uint64_t n = static_cast<uint64_t>(scaled(100'000));
    EXPECT_EQ(sum.load(), n * (n - 1) / 2);
    EXPECT_EQ(rt.leftover_fibers(), 0u);
    // Fibers never started hold no stack; finished ones give theirs back for reuse.
    EXPECT_LT(rt.stacks().mapped(), 2000u) << "procs=" << procs;
  }
}

TEST(Scheduler, DispatchRunsChildFirst) {
  Runtime rt(opts(1));
  std::vector<int> order;
  rt.run([&] {
    auto h = spawn([&] { order.push_back(1); }, {.name = "child", .launch = Launch::dispatch});
    order.push_back(2);
    h.join();
    auto h2 = spawn([&] { order.push_back(3); });
    order.push_back(4);
    h2.join();
  });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 4, 3}));
}

TEST(Scheduler, DetachedFibersFinish) {
  Runtime rt(opts(2));
  std::atomic<int> done{0};
  rt.run([&] {
    for (int i = 0; i < 1000; ++i) spawn([&] { done.fetch_add(1); }).detach();
    while (done.load() < 1000) yield();
  });
  EXPECT_EQ(done.load(), 1000);
  EXPECT_EQ(rt.leftover_fibers(), 0u);
}

TEST(Scheduler, IdleProcessorStealsWork) {
  Runtime rt(opts(2));
  std::atomic<int> on_other{0};
  rt.run([&] {
    unsigned home = Processor::current()->index();
    std::vector<FiberHandle> hs;
    // Busy fibers queued on this processor; the idle one must steal some of them.
    for (int i = 0; i < 64; ++i) {
      hs.push_back(spawn([&, home] {
        auto until = now() + std::chrono::milliseconds(2);
        while (now() < until) {
        }
        if (Processor::current()->index() != home) on_other.fetch_add(1);
      }));
    }
    for (auto& h : hs) h.join();
  });
  EXPECT_GT(on_other.load(), 0);
}

TEST(Scheduler, YieldingFiberCannotStarveAnother) {
  Runtime rt(opts(1));
  std::atomic<bool> other_ran{false};
  rt.run([&] {
    auto h = spawn([&] { other_ran = true; });
    // A fiber that yields in a loop: the other must get the processor within a few yields.
    int yields = 0;
    while (!other_ran.load() && yields < 1000) {
      yield();
      ++yields;
    }
    EXPECT_TRUE(other_ran.load());
    EXPECT_LE(yields, 2);
    h.join();
  });
}

TEST(Scheduler, SpawnFloodCannotStarveReadyFiber) {
  Runtime rt(opts(1));
  std::atomic<bool> victim_ran{false};
  std::atomic<int> spawned{0};
  rt.run([&] {
    auto victim = spawn([&] { victim_ran = true; });
    // A chain in which each fiber dispatches the next (child-first, through the LIFO slot),
    // for as long as the victim has not run: bounded LIFO means the victim gets its turn.
    struct Chain {
      static void link(std::atomic<bool>* ran, std::atomic<int>* n) {
        if (ran->load() || n->fetch_add(1) > 100'000) return;
        spawn([ran, n] { link(ran, n); }, {.launch = Launch::dispatch}).detach();
      }
    };
    Chain::link(&victim_ran, &spawned);
    victim.join();
    EXPECT_TRUE(victim_ran.load());
    EXPECT_LT(spawned.load(), 1000);
  });
}

TEST(Scheduler, ParkUnparkAcrossProcessors) {
  Runtime rt(opts(2));
  constexpr int kRounds = 20'000;
  rt.run([&] {
    Fiber* a = current_fiber();
    std::atomic<Fiber*> b{nullptr};
    std::atomic<int> turn{0};  // even: b's turn; odd: a's turn
    auto hb = spawn([&] {
      b = current_fiber();
      for (int i = 0; i < kRounds; ++i) {
        while (turn.load() != 2 * i) park();
        turn.store(2 * i + 1);
        unpark(a);
      }
    });
    while (!b.load()) yield();
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load() != 2 * i + 1) park();
      turn.store(2 * i + 2);
      unpark(b.load());
    }
    hb.join();
    EXPECT_EQ(turn.load(), 2 * kRounds);
  });
}

std::string g_hook_name;
std::string g_hook_what;

TEST(Scheduler, EscapingExceptionReachesHookWithName) {
  auto old = set_exception_hook([](const char* name, std::exception_ptr e) {
    g_hook_name = name;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      g_hook_what = ex.what();
    }
  });
  Runtime rt(opts(2));
  rt.run([&] { spawn([] { throw std::runtime_error("boom"); }, {.name = "thrower"}).join(); });
  set_exception_hook(old);
  EXPECT_EQ(g_hook_name, "thrower");
  EXPECT_EQ(g_hook_what, "boom");
}

TEST(Scheduler, ExternalThreadCanSpawnAndJoin) {
  Runtime rt(opts(2));
  std::atomic<bool> ready{false};
  std::atomic<int> value{0};
  std::thread outside;
  rt.run([&] {
    outside = std::thread([&] {
      auto h = rt.spawn([&] { value = 42; });
      h.join();
      ready = true;
    });
    while (!ready.load()) sleep_for(std::chrono::milliseconds(1));
  });
  outside.join();
  EXPECT_EQ(value.load(), 42);
}

TEST(Scheduler, LeftoverFibersAreCountedNotLeaked) {
  Runtime rt(opts(1));
  rt.run([&] {
    spawn([] {
      while (true) park();  // parked forever
    }).detach();
    yield();
    spawn([] {}).detach();  // queued, never started
  });
  EXPECT_EQ(rt.leftover_fibers(), 2u);
}

TEST(Scheduler, ManyRuntimesInSequence) {
  for (int i = 0; i < 20; ++i) {
    Runtime rt(opts(2));
    int x = 0;
    rt.run([&] { spawn([&] { x = 1; }).join(); });
    EXPECT_EQ(x, 1);
  }
}

TEST(Scheduler, CurrentFiberIdsAreDistinct) {
  Runtime rt(opts(2));
  std::set<uint64_t> ids;
  rt.run([&] {
    std::vector<FiberHandle> hs;
    for (int i = 0; i < 100; ++i) hs.push_back(spawn([] {}));
    for (auto& h : hs) ids.insert(h.id());
    for (auto& h : hs) h.join();
  });
  EXPECT_EQ(ids.size(), 100u);
}

}  // namespace
}  // namespace weft::rt

namespace weft::rt {
namespace {

// --- Fairness with every processor busy: helping ---------------------------------------

// Scheduling rounds made so far by every processor but `except` (default: the caller's).
uint64_t others_rounds(Runtime& rt, unsigned except) {
  uint64_t sum = 0;
  for (unsigned i = 0; i < rt.processors(); ++i) {
    if (i != except) sum += rt.processor(i).rounds();
  }
  return sum;
}

uint64_t others_rounds(Runtime& rt) {
  return others_rounds(rt, Processor::current()->index());
}

// Far more rounds than helping needs (help_age is 100 us; a round is at least tens of ns, so
// about 10^4 rounds a processor) and far fewer than a stall lets pass before the bound trips.
constexpr uint64_t kRoundBound = 2'000'000;

// Keeps every processor busy with fibers that yield in a loop until `stop`; returns once
// each processor has run one of them (so none of them runs dry and steals).
std::vector<FiberHandle> occupy_all(Runtime& rt, std::atomic<bool>& stop) {
  auto seen = std::make_shared<std::atomic<uint64_t>>(0);
  std::vector<FiberHandle> hs;
  for (unsigned i = 0; i < 2 * rt.processors(); ++i) {
    hs.push_back(spawn([&stop, seen] {
      while (!stop.load(std::memory_order_acquire)) {
        seen->fetch_or(1ull << Processor::current()->index(), std::memory_order_relaxed);
        yield();
      }
    }));
  }
  uint64_t all = (1ull << rt.processors()) - 1;
  for (int i = 0; i < 10'000'000 && seen->load() != all; ++i) yield();
  EXPECT_EQ(seen->load(), all) << "could not occupy every processor";
  return hs;
}

// A fiber spinning without yielding, on a processor whose queue holds fibers behind it,
// while every other processor runs fibers that yield: each queued fiber still runs, within
// a bounded number of the other processors' scheduling rounds.
void spinner_cannot_starve_queue(unsigned procs) {
  Runtime rt(opts(procs));
  constexpr int kQueued = 8;
  std::atomic<int> ran{0};
  uint64_t worst = 0;
  rt.run([&] {
    std::atomic<bool> stop{false};
    auto busy = occupy_all(rt, stop);
    std::vector<uint64_t> ran_at(kQueued, 0);
    uint64_t start = 0;
    unsigned spin_proc = 0;
    std::atomic<bool> started{false};
    // Posted to this processor's queue: the spinner first, the queued fibers behind it.
    auto spinner = spawn([&] {
      spin_proc = Processor::current()->index();
      start = others_rounds(rt);
      started.store(true);
      auto limit = now() + std::chrono::seconds(30);  // a hang guard, not the criterion
      while (ran.load() < kQueued && others_rounds(rt) - start < kRoundBound && now() < limit) {
        cpu_relax();
      }
    });
    std::vector<FiberHandle> queued;
    for (int i = 0; i < kQueued; ++i) {
      queued.push_back(spawn([&, i] {
        ran_at[i] = started.load() ? others_rounds(rt, spin_proc) - start : 0;
        ran.fetch_add(1);
      }));
    }
    spinner.join();
    stop.store(true);
    for (auto& h : busy) h.join();
    for (auto& h : queued) h.join();
    for (uint64_t r : ran_at) worst = std::max(worst, r);
  });
  EXPECT_EQ(ran.load(), kQueued) << "fibers queued behind a spinning fiber did not run";
  EXPECT_LT(worst, kRoundBound) << procs << " processors";
  uint64_t helped = 0;
  for (unsigned i = 0; i < rt.processors(); ++i) helped += rt.processor(i).helped();
  EXPECT_GT(helped, 0u);
}

TEST(Fairness, SpinnerCannotStarveItsQueueTwoProcessors) {
  spinner_cannot_starve_queue(2);
}

TEST(Fairness, SpinnerCannotStarveItsQueueFourProcessors) {
  spinner_cannot_starve_queue(4);
}

// The thesis' transfer scenario: a leader busy-waits, never yielding, until every other
// fiber has acknowledged its epoch; the others yield (or park) in between. Every epoch must
// end within a bounded number of the other processors' rounds: none stalls.
void transfer_completes(unsigned procs, bool park_followers) {
  Runtime rt(opts(procs));
  constexpr unsigned kFibers = 16;
  const uint64_t epochs = static_cast<uint64_t>(scaled(200));
  std::atomic<uint64_t> done_epochs{0};
  std::atomic<bool> stalled{false};
  std::string stall_report;
  rt.run([&] {
    struct Member {
      std::atomic<uint64_t> seen{0};
      Semaphore sem{0};
      std::atomic<int> at{0};       // for the stall report: 1-4 in follow, 5 leading, 6 done
      std::atomic<unsigned> on{0};  // the processor it last ran on
    };
    std::deque<Member> m(kFibers);
    std::atomic<uint64_t> epoch{0};
    std::atomic<unsigned> leader{0};
    auto over = [&] { return done_epochs.load() >= epochs || stalled.load(); };
    auto lead = [&](unsigned me) {
      // The previous leader may have ended the last epoch between this fiber's look at
      // over() and its look at `leader`: the followers are leaving then, and an epoch begun
      // now would wait for them forever (this stalled the test 30 s about once in 100 runs
      // under TSan on a loaded machine). The previous leader counted its epoch before it
      // named this one, so this look sees the count.
      if (over()) return;
      uint64_t e = epoch.load() + 1;
      m[me].seen.store(e);
      epoch.store(e);
      uint64_t start = others_rounds(rt);
      std::vector<uint64_t> rounds0(rt.processors());
      for (unsigned p = 0; p < rt.processors(); ++p) rounds0[p] = rt.processor(p).rounds();
      auto limit = now() + std::chrono::seconds(30);  // a hang guard, not the criterion
      for (unsigned i = 0; i < kFibers; ++i) {
        while (m[i].seen.load() != e) {
          if (others_rounds(rt) - start > kRoundBound || now() > limit) {
            // Say where it stood: which processors made rounds, and what they held.
            std::string d = "stalled on follower " + std::to_string(i) + " (at " +
                            std::to_string(m[i].at.load()) + ", last on processor " +
                            std::to_string(m[i].on.load()) + "), leader on processor " +
                            std::to_string(Processor::current()->index()) + ":";
            for (unsigned p = 0; p < rt.processors(); ++p) {
              d += " [p" + std::to_string(p) + " rounds +" +
                   std::to_string(rt.processor(p).rounds() - rounds0[p]) + " queue " +
                   std::to_string(rt.processor(p).queue_length()) + "]";
            }
            if (!stalled.exchange(true)) stall_report = d;
            break;
          }
          cpu_relax();
        }
      }
      done_epochs.fetch_add(1);
      leader.store(static_cast<unsigned>((e * 7 + 3) % kFibers));
      if (park_followers) {
        for (unsigned i = 0; i < kFibers; ++i) {
          if (i != me) m[i].sem.release();
        }
      }
    };
    auto follow = [&](unsigned me) {
      m[me].at.store(1);
      yield();
      m[me].at.store(2);
      m[me].on.store(Processor::current()->index());
      uint64_t e = epoch.load();
      if (e == m[me].seen.load()) return;
      m[me].seen.store(e);
      m[me].at.store(3);
      if (park_followers) {
        m[me].sem.acquire();
      } else {
        yield();
      }
      m[me].at.store(4);
      m[me].on.store(Processor::current()->index());
    };
    std::vector<FiberHandle> hs;
    for (unsigned i = 0; i < kFibers; ++i) {
      hs.push_back(spawn([&, i] {
        while (!over()) {
          if (leader.load() == i) {
            m[i].at.store(5);
            lead(i);
          } else {
            follow(i);
          }
        }
        m[i].at.store(6);
        // Let followers parked on the last epoch go.
        for (auto& mm : m) mm.sem.release();
      }));
    }
    for (auto& h : hs) h.join();
  });
  EXPECT_FALSE(stalled.load()) << procs << " processors, " << (park_followers ? "park" : "yield")
                               << "; " << stall_report;
  EXPECT_GE(done_epochs.load(), epochs);
}

TEST(Fairness, TransferWithYieldingFollowersNeverStalls) {
  transfer_completes(2, false);
  transfer_completes(4, false);
}

TEST(Fairness, TransferWithParkingFollowersNeverStalls) {
  transfer_completes(2, true);
  transfer_completes(4, true);
}

// A fiber woken into the waker's LIFO slot must not wait for a waker that stays busy when
// another processor is idle: the idle one takes it.
TEST(Scheduler, WokenFiberRunsWhileWakerStaysBusy) {
  RuntimeOptions o;
  o.processors = 2;
  Runtime rt(o);
  std::atomic<int64_t> waited_us{-1};
  rt.run([&] {
    std::atomic<bool> go{false};
    std::atomic<bool> ran{false};
    std::atomic<Fiber*> target{nullptr};
    TimePoint start{};
    auto h = spawn([&] {
      target = current_fiber();
      while (!go.load()) park();
      waited_us = std::chrono::duration_cast<std::chrono::microseconds>(now() - start).count();
      ran = true;
    });
    while (!target.load()) yield();
    sleep_for(std::chrono::milliseconds(5));  // the target parks, the other processor sleeps
    start = now();
    go = true;
    unpark(target.load());
    // Busy, without yielding, for up to a second.
    while (!ran.load() && now() - start < std::chrono::seconds(1)) cpu_relax();
    h.join();
  });
  EXPECT_GE(waited_us.load(), 0);
  EXPECT_LT(waited_us.load(), 100'000) << "the woken fiber waited for the busy waker";
}

}  // namespace
}  // namespace weft::rt

namespace weft::rt {
namespace {

// --- Idle processors: ready work is never stranded while one sleeps ---------------------

using std::chrono::microseconds;
using std::chrono::milliseconds;

// How long a fiber holds its processor without yielding in the stranding scenarios: long
// enough that a fiber stranded behind it is plainly late, short enough for many rounds.
constexpr auto kHold = milliseconds(60);
// What the runtime may add to the kernel's own wake-up latency (the "within 1 ms");
// TSan slows every switch and wake-up about tenfold, and it stays far under kHold.
#if defined(WEFT_TSAN)
constexpr int64_t kReadySlackUs = 10'000;
#else
constexpr int64_t kReadySlackUs = 1'000;
#endif
// What the runtime may add to the kernel's own timer lateness (the issue's "within 2 ms of
// its deadline"): two processors wake for the timer, one CPU of two is held.
#if defined(WEFT_TSAN)
constexpr int64_t kTimerSlackUs = 10'000;
#else
constexpr int64_t kTimerSlackUs = 2'000;
#endif
constexpr int kStrandRounds = 15;

// Busy for `d` or until `done`, without yielding.
void hold_for(Duration d, const std::atomic<bool>& done) {
  auto until = now() + d;
  while (!done.load(std::memory_order_acquire) && now() < until) cpu_relax();
}

// Lets every other processor of the calling fiber's runtime fall asleep: a sleep (its
// timer wakes a processor, which finds nothing) and then a while without any push.
void settle() {
  sleep_for(milliseconds(2));
  std::atomic<bool> never{false};
  hold_for(milliseconds(2), never);
}

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

std::string show(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += std::to_string(x) + " ";
  return s;
}

int64_t us_since(TimePoint t) {
  return std::chrono::duration_cast<microseconds>(now() - t).count();
}

// The peer: the same hand-offs done by the kernel alone, in microseconds. The scenario
// below wakes two sleepers in sequence (one for g, which wakes the next for f) while two
// CPUs are held; here the caller wakes thread A, which wakes thread B and then holds its CPU
// without yielding, as the caller does; B's wait is returned. On this shared 2-CPU VM under
// others' builds a wake-up can take a scheduler tick (4 ms), so the runtime's waits are
// judged against this, measured in the same rounds.
int64_t kernel_wake_wait() {
  std::atomic<int> wake_a{0};
  std::atomic<int> wake_b{0};
  std::atomic<int> blocked{0};
  std::atomic<bool> done{false};
  TimePoint woken_at{};
  int64_t waited = -1;
  std::thread b([&] {
    blocked.fetch_add(1);
    wake_b.wait(0);
    waited = us_since(woken_at);
    done.store(true, std::memory_order_release);
  });
  std::thread a([&] {
    blocked.fetch_add(1);
    wake_a.wait(0);
    wake_b.store(1);
    wake_b.notify_one();
    hold_for(kHold, done);
  });
  while (blocked.load() < 2) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(1));  // both blocked in their futexes by now
  woken_at = now();
  wake_a.store(1);
  wake_a.notify_one();
  hold_for(kHold, done);
  a.join();
  b.join();
  return waited;
}

struct StrandWaits {
  std::vector<int64_t> fiber;   // how long the stranded fiber waited (us), per round
  std::vector<int64_t> kernel;  // kernel_wake_wait() in the same rounds
};

// The scenario, on 3 processors: the caller (P0) spawns g, which wakes a sleeper
// (P1, counted as searching before it is awake); then f, for which nobody is woken (one
// searches); P1 steals half of P0's queue (g alone) and runs it; P0 and P1 now hold their
// processors. `via_lifo`: f is woken into P0's LIFO slot instead of its queue.
StrandWaits stranded_waits(bool via_lifo, Duration help_age) {
  RuntimeOptions o = opts(3);
  o.help_age = help_age;
  Runtime rt(o);
  StrandWaits out;
  rt.run([&] {
    for (int round = 0; round < kStrandRounds; ++round) {
      out.kernel.push_back(kernel_wake_wait());
      std::atomic<bool> ran{false};
      std::atomic<bool> go{false};
      std::atomic<Fiber*> target{nullptr};
      TimePoint ready_at{};
      int64_t waited = -1;
      auto body = [&] {
        waited = us_since(ready_at);
        ran.store(true, std::memory_order_release);
      };
      FiberHandle f;
      if (via_lifo) {
        f = spawn([&] {
          target.store(current_fiber());
          while (!go.load()) park();
          body();
        });
        while (!target.load()) yield();
      }
      settle();
      auto g = spawn([&] { hold_for(kHold, ran); });
      ready_at = now();
      if (via_lifo) {
        go.store(true);
        unpark(target.load());  // into this processor's LIFO slot
      } else {
        f = spawn(body);
      }
      hold_for(kHold, ran);
      g.join();
      f.join();
      out.fiber.push_back(waited);
    }
  });
  return out;
}

// Returns false (the test then skips) when the kernel's own wake-ups took so long that a
// stranded fiber (waiting about kHold) could not be told from a woken one.
bool judgeable(const StrandWaits& w) {
  return median(w.kernel) < std::chrono::duration_cast<microseconds>(kHold).count() / 4;
}

void expect_not_stranded(const StrandWaits& w, const std::string& what) {
  // On a loaded machine (ctest -j2 beside a build) a woken fiber's extra hops (an eventfd,
  // a queue, a switch; for the LIFO slot a nap of help_age, then a steal) each wait for a
  // CPU too: 4.0 to 7.7 ms against the kernel's 2.6 to 3.5 ms were seen. So up to kHold / 6
  // more is allowed there: a stranded fiber waits for a holder, about kHold, and
  // judgeable() keeps the kernel's own figure under kHold / 4, so the two never meet.
  const int64_t slack =
      std::max(kReadySlackUs, std::chrono::duration_cast<microseconds>(kHold).count() / 6);
  EXPECT_LE(median(w.fiber), median(w.kernel) + slack)
      << what << "; fiber waits (us): " << show(w.fiber)
      << "; the kernel's wake-ups (us): " << show(w.kernel);
}

// The peer of timer_lateness: thread A, blocked, is woken (as the runtime wakes the idle
// processor that will fire the timer), then sleeps until a deadline 1 ms after the wake-up
// while the caller holds its CPU; returns how late A woke, in microseconds.
int64_t kernel_timer_lateness() {
  std::atomic<int> wake{0};
  std::atomic<bool> blocked{false};
  std::atomic<bool> done{false};
  TimePoint deadline{};
  int64_t late = -1;
  std::thread a([&] {
    blocked.store(true);
    wake.wait(0);
    std::this_thread::sleep_until(deadline);
    late = us_since(deadline);
    done.store(true, std::memory_order_release);
  });
  while (!blocked.load()) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(1));
  deadline = now() + milliseconds(1);
  wake.store(1);
  wake.notify_one();
  hold_for(kHold, done);
  a.join();
  return late;
}

// A fiber sleeps for 1 ms; its timer is in the heap of its processor (P0), which then runs
// a fiber that does not yield (the caller, resumed from the LIFO slot), while the other two
// processors sleep. Returns how late the sleeper woke in each round, and the peer's.
StrandWaits timer_lateness() {
  Runtime rt(opts(3));
  StrandWaits out;
  rt.run([&] {
    for (int round = 0; round < kStrandRounds; ++round) {
      out.kernel.push_back(kernel_timer_lateness());
      settle();
      std::atomic<bool> fired{false};
      int64_t late = -1;
      TimePoint deadline = now() + milliseconds(1);
      // Dispatched: it runs at once, here, and arms its timer in this processor's heap.
      auto t = spawn(
          [&] {
            sleep_until(deadline);
            late = us_since(deadline);
            fired.store(true, std::memory_order_release);
          },
          {.launch = Launch::dispatch});
      hold_for(kHold, fired);
      t.join();
      out.fiber.push_back(late);
    }
  });
  return out;
}

TEST(IdleProcessors, TimerFiresWhileItsProcessorIsHeld) {
  StrandWaits w = timer_lateness();
  if (!judgeable(w)) GTEST_SKIP() << "the kernel's timers were late by (us) " << show(w.kernel);
  // As in expect_not_stranded: on a loaded machine the firing processor's wake-up and the
  // sleeper's switch each wait for a CPU as well (medians of 3.3 and 4.5 ms against the
  // kernel's 0.1 ms were seen with three processors on two busy cores), so up to kHold / 6
  // is allowed; a timer stuck behind its held processor is late by about kHold.
  const int64_t slack =
      std::max(kTimerSlackUs, std::chrono::duration_cast<microseconds>(kHold).count() / 6);
  EXPECT_LE(median(w.fiber), median(w.kernel) + slack)
      << "sleeper late by (us): " << show(w.fiber)
      << "; the kernel's own sleeper late by (us): " << show(w.kernel);
}

// A driver whose park() delivers a completion made ready while parked, as the I/O drivers'
// do when they reap inside park(), and that counts the unparks it is sent.
class SelfCompletingDriver final : public Driver {
 public:
  const char* name() const override { return "self-completing"; }
  int poll() override { return 0; }
  void park(int64_t timeout_ns) override {
    if (Fiber* f = pending.exchange(nullptr)) {
      detail::unpark(f, false);
      return;
    }
    basic_->park(timeout_ns);
  }
  void unpark() override {
    unparks.fetch_add(1);
    basic_->unpark();
  }

  std::atomic<Fiber*> pending{nullptr};
  std::atomic<int> unparks{0};

 private:
  std::unique_ptr<Driver> basic_ = make_basic_driver();
};

// A processor whose own completion, handled inside its park, makes a fiber ready is awake
// already: its push must not wake it again through its driver (an eventfd write, and a
// spurious return from its next park), nor wake another processor for that fiber.
TEST(IdleProcessors, OwnCompletionInParkWakesNobody) {
  for (unsigned procs : {1u, 2u}) {
    std::vector<SelfCompletingDriver*> drivers(procs);
    RuntimeOptions o = opts(procs);
    o.make_driver = [&](unsigned i) -> std::unique_ptr<Driver> {
      auto d = std::make_unique<SelfCompletingDriver>();
      drivers[i] = d.get();
      return d;
    };
    Runtime rt(o);
    int unparks = -1;
    rt.run([&] {
      settle();
      auto* mine = drivers[Processor::current()->index()];
      int before = 0;
      for (auto* d : drivers) before += d->unparks.load();
      // Parked until this processor's driver, parked too, completes "our operation".
      mine->pending.store(current_fiber());
      park();
      unparks = -before;
      for (auto* d : drivers) unparks += d->unparks.load();
    });
    EXPECT_EQ(unparks, 0) << procs << " processor(s)";
  }
}

TEST(Scheduler, SleepForDurationMaxNeverReturns) {
  Runtime rt(opts(1));
  std::atomic<bool> returned{false};
  rt.run([&] {
    spawn([&] {
      sleep_for(Duration::max());  // no time limit: now() + d saturates, it does not wrap
      returned.store(true);
    }).detach();
    sleep_for(milliseconds(20));
    EXPECT_FALSE(returned.load());
  });
  EXPECT_EQ(rt.leftover_fibers(), 1u);
}

TEST(IdleProcessors, QueuedFiberRunsWhileTwoHoldAndOneSleeps) {
  StrandWaits w = stranded_waits(false, RuntimeOptions{}.help_age);
  if (!judgeable(w)) GTEST_SKIP() << "the kernel's wake-ups took (us) " << show(w.kernel);
  expect_not_stranded(w, "queued");
}

TEST(IdleProcessors, LifoSlotFiberRunsWhileTwoHoldAndOneSleeps) {
  for (Duration age : {RuntimeOptions{}.help_age, Duration::zero()}) {
    StrandWaits w = stranded_waits(true, age);
    if (!judgeable(w)) GTEST_SKIP() << "the kernel's wake-ups took (us) " << show(w.kernel);
    expect_not_stranded(w, age == Duration::zero() ? "LIFO slot, helping off" : "LIFO slot");
  }
}

}  // namespace
}  // namespace weft::rt
