// The runtime benchmarks, one template per benchmark, instantiated for WeftPeer and BoostPeer
// (peers.hpp): both runtimes run the very same code. Each fills Figures with its results;
// the caller runs it in a child process (child.hpp), which adds peak RSS and page faults.
//
// Every benchmark spawns its fibers behind a start gate and starts the clock when it opens,
// so fiber creation is outside the timed part unless it is what is measured.
//
// yield, cycle, churn, locality and transfer follow the micro-benchmarks of Thierry Delisle's
// thesis on the Cforall scheduler (University of Waterloo, 2022); skynet is the benchmark of
// Boost.Fiber's performance docs; lock follows ulockflex (N threads, one lock, a critical
// section and non-critical work, fairness as the spread of per-thread acquisitions).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "bench/child.hpp"
#include "bench/peers.hpp"

namespace weft::bench {

using BenchClock = std::chrono::steady_clock;

inline double seconds_since(BenchClock::time_point t0) {
  return std::chrono::duration<double>(BenchClock::now() - t0).count();
}

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(BenchClock::now().time_since_epoch())
      .count();
}

inline uint64_t xorshift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

inline void cpu_pause() {
  __builtin_ia32_pause();
}

/// Returns user + system CPU seconds of the whole process so far.
inline double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

/// Spins `n` rounds of a PRNG the compiler cannot drop: stand-in work of a known length.
inline void local_work(uint64_t& rng, unsigned n) {
  uint64_t x = rng;
  for (unsigned i = 0; i < n; ++i) {
    xorshift(x);
    asm volatile("" : "+r"(x));
  }
  rng = x;
}

/// Fibers wait here (yielding) until the measurement starts.
class Gate {
 public:
  template <typename P>
  void wait() const {
    while (!open_.load(std::memory_order_acquire)) P::yield();
  }
  void open() { open_.store(true, std::memory_order_release); }

 private:
  std::atomic<bool> open_{false};
};

// ---------------------------------------------------------------------------------------
// yield: `fibers` fibers each yield `yields` times. Per switch: elapsed x procs / switches.

template <typename P>
void yield_bench(const RunConfig& cfg, unsigned fibers, uint64_t yields, Figures& out) {
  double elapsed = 0;
  P::run(cfg, [&] {
    Gate gate;
    std::vector<typename P::Handle> hs;
    for (unsigned i = 0; i < fibers; ++i) {
      hs.push_back(P::spawn([&] {
        gate.wait<P>();
        for (uint64_t k = 0; k < yields; ++k) P::yield();
      }));
    }
    auto t0 = BenchClock::now();
    gate.open();
    for (auto& h : hs) h.join();
    elapsed = seconds_since(t0);
  });
  double switches = static_cast<double>(fibers) * static_cast<double>(yields);
  out.set("ns_per_switch", elapsed * 1e9 * cfg.procs / switches);
  out.set("Mswitch_per_s", switches / elapsed / 1e6);
}

// ---------------------------------------------------------------------------------------
// spawn+join: `total` fibers with an empty body, spawned and joined `batch` at a time (1: spawn
// one, join it). One untimed batch first, so both runtimes run with warm stack caches.

template <typename P>
void spawn_join_bench(const RunConfig& cfg, uint64_t total, unsigned batch, Figures& out) {
  double elapsed = 0;
  P::run(cfg, [&] {
    std::atomic<uint64_t> ran{0};
    auto body = [&ran] { ran.fetch_add(1, std::memory_order_relaxed); };
    std::vector<typename P::Handle> hs;
    hs.reserve(batch);
    auto round = [&] {
      for (unsigned i = 0; i < batch; ++i) hs.push_back(P::spawn(body));
      for (auto& h : hs) h.join();
      hs.clear();
    };
    round();
    auto t0 = BenchClock::now();
    for (uint64_t done = 0; done < total; done += batch) round();
    elapsed = seconds_since(t0);
  });
  out.set("ns_per_fiber", elapsed * 1e9 / static_cast<double>(total));
}

// ---------------------------------------------------------------------------------------
// skynet: a 10-ary tree of fibers; each leaf sends its number to its parent's channel, each
// inner fiber sums its children's and sends that up.

template <typename P>
void skynet_node(typename P::Channel& parent, uint64_t num, uint64_t size, uint64_t div,
                 Launch launch) {
  if (size == 1) {
    parent.send(num);
    return;
  }
  typename P::Channel mine;
  for (uint64_t i = 0; i < div; ++i) {
    uint64_t sub = num + i * (size / div);
    P::spawn(
        [&mine, sub, size, div, launch] { skynet_node<P>(mine, sub, size / div, div, launch); },
        launch)
        .detach();
  }
  uint64_t sum = 0;
  for (uint64_t i = 0; i < div; ++i) sum += mine.recv();
  parent.send(sum);
}

// With `warm`, the tree runs once untimed first, in the same runtime: the second run shows
// the cost once stacks (weft's pool, Boost's malloc) are no longer fresh memory.
template <typename P>
void skynet_bench(const RunConfig& cfg, uint64_t size, Launch launch, bool warm, Figures& out) {
  double elapsed = 0;
  uint64_t sum = 0;
  P::run(cfg, [&] {
    auto once = [&] {
      typename P::Channel result;
      P::spawn([&] { skynet_node<P>(result, 0, size, 10, launch); }, launch).detach();
      return result.recv();
    };
    if (warm) once();
    auto t0 = BenchClock::now();
    sum = once();
    elapsed = seconds_since(t0);
  });
  out.set("ms", elapsed * 1e3);
  out.set("sum_ok", sum == size * (size - 1) / 2 ? 1 : 0);
}

// ---------------------------------------------------------------------------------------
// cycle: `rings` rings of `ring_size` fibers; each waits on its own semaphore, then posts the
// next one's, `iters` times. One token per ring.

template <typename P>
void cycle_bench(const RunConfig& cfg, unsigned rings, unsigned ring_size, uint64_t iters,
                 Figures& out) {
  double elapsed = 0;
  unsigned n = rings * ring_size;
  P::run(cfg, [&] {
    std::deque<typename P::Semaphore> sems;
    for (unsigned i = 0; i < n; ++i) sems.emplace_back(0);
    std::vector<typename P::Handle> hs;
    for (unsigned i = 0; i < n; ++i) {
      hs.push_back(P::spawn([&, i] {
        auto& self = sems[i];
        auto& next = sems[(i + rings) % n];
        for (uint64_t k = 0; k < iters; ++k) {
          self.acquire();
          next.release();
        }
      }));
    }
    auto t0 = BenchClock::now();
    for (unsigned r = 0; r < rings; ++r) sems[r].release();
    for (auto& h : hs) h.join();
    elapsed = seconds_since(t0);
  });
  double handoffs = static_cast<double>(n) * static_cast<double>(iters);
  out.set("Mhandoff_per_s", handoffs / elapsed / 1e6);
  out.set("ns_per_handoff", elapsed * 1e9 / handoffs);
}

// ---------------------------------------------------------------------------------------
// churn: `fibers` fibers each pick a random semaphore out of `spots`, V it, then P it (the
// first `spots` fibers skip their first V, so about `spots` fibers are always blocked). Runs
// for `duration`; then every semaphore gets enough permits to let everyone out.

template <typename P>
void churn_bench(const RunConfig& cfg, unsigned fibers, unsigned spots,
                 std::chrono::milliseconds duration, Figures& out) {
  double elapsed = 0;
  uint64_t ops = 0;
  P::run(cfg, [&] {
    std::deque<typename P::Semaphore> sems;
    for (unsigned i = 0; i < spots; ++i) sems.emplace_back(0);
    struct alignas(64) Count {
      uint64_t n = 0;
    };
    std::vector<Count> counts(fibers);
    std::atomic<bool> stop{false};
    Gate gate;
    std::vector<typename P::Handle> hs;
    BenchClock::time_point end{};  // written before gate.open(), read after gate.wait()
    for (unsigned i = 0; i < fibers; ++i) {
      hs.push_back(P::spawn([&, i] {
        gate.wait<P>();
        uint64_t rng = 0x9E3779B97F4A7C15ull * (i + 1);
        bool skip = i < spots;
        uint64_t n = 0;
        // Each fiber also watches the clock: an acquire that finds a permit does not block,
        // so two fibers can churn on both processors without ever returning to a scheduler,
        // and the sleeping main fiber's timer (on a processor they hold) would never fire
        // to set `stop`: the run hung about once in ten (2 processors, --quick).
        while (!stop.load(std::memory_order_relaxed) &&
               ((n & 63) != 0 || BenchClock::now() < end)) {
          auto& sem = sems[xorshift(rng) % spots];
          if (!skip) sem.release();
          skip = false;
          sem.acquire();
          ++n;
        }
        counts[i].n = n;
      }));
    }
    auto t0 = BenchClock::now();
    end = t0 + duration;
    gate.open();
    P::sleep_for(duration);
    stop.store(true, std::memory_order_relaxed);
    elapsed = seconds_since(t0);
    for (auto& s : sems) s.release(fibers);
    for (auto& h : hs) h.join();
    for (auto& c : counts) ops += c.n;
  });
  out.set("Mops_per_s", static_cast<double>(ops) / elapsed / 1e6);
}

// ---------------------------------------------------------------------------------------
// locality: `fibers` fibers, each with a data buffer of `words` words; only `procs` run at a
// time, the others wait in one of fibers - procs seats. A fiber touches `touches` random words
// of its buffer, then takes a random seat, waking its occupant, and waits there. "share": the
// woken occupant is handed the buffer (data follows the wake-up); "noshare": every fiber keeps
// its own buffer. Counts data migrations: a buffer touched on another kernel thread than last.

namespace locality {

inline int thread_tag() {
  static std::atomic<int> next{1};
  thread_local int tag = next.fetch_add(1);
  return tag;
}

struct alignas(128) Data {
  std::vector<uint64_t> words;
  int last_thread = 0;
};

template <typename P>
struct alignas(128) Ctx {
  Data* data = nullptr;
  typename P::Semaphore sem{0};
  uint64_t ops = 0;
  uint64_t migrations = 0;
};

template <typename P>
class alignas(128) Seat {
 public:
  // Takes the seat, waking its occupant (and handing it `data` when sharing), then waits to be
  // woken in turn; returns true when the seat was closed instead.
  bool take(Ctx<P>& me, Data* data, bool share) {
    Ctx<P>* cur = ptr_.load(std::memory_order_acquire);
    while (true) {
      if (cur == closed()) return true;
      if (ptr_.compare_exchange_weak(cur, &me, std::memory_order_acq_rel)) break;
    }
    if (cur) {
      if (share) cur->data = data;
      cur->sem.release();
    }
    me.sem.acquire();
    return false;
  }
  // Closes the seat and wakes its occupant.
  void close() {
    Ctx<P>* cur = ptr_.exchange(closed(), std::memory_order_acq_rel);
    if (cur && cur != closed()) cur->sem.release();
  }

 private:
  static Ctx<P>* closed() { return reinterpret_cast<Ctx<P>*>(uintptr_t{1}); }
  std::atomic<Ctx<P>*> ptr_{nullptr};
};

}  // namespace locality

template <typename P>
void locality_bench(const RunConfig& cfg, unsigned fibers, bool share, unsigned words,
                    unsigned touches, std::chrono::milliseconds duration, Figures& out) {
  using namespace locality;
  double elapsed = 0;
  uint64_t ops = 0, migrations = 0;
  unsigned nseats = fibers > cfg.procs ? fibers - cfg.procs : 1;
  P::run(cfg, [&] {
    std::deque<Data> data(fibers);
    for (auto& d : data) d.words.assign(words, 0);
    std::deque<Ctx<P>> ctxs(fibers);
    std::deque<Seat<P>> seats(nseats);
    std::atomic<bool> stop{false};
    Gate gate;
    std::vector<typename P::Handle> hs;
    for (unsigned i = 0; i < fibers; ++i) {
      ctxs[i].data = &data[i];
      hs.push_back(P::spawn([&, i] {
        Ctx<P>& me = ctxs[i];
        uint64_t rng = 0x9E3779B97F4A7C15ull * (i + 1);
        gate.wait<P>();
        while (true) {
          Data* d = me.data;
          int tag = thread_tag();
          if (d->last_thread != tag) {
            d->last_thread = tag;
            ++me.migrations;
          }
          for (unsigned k = 0; k < touches; ++k) d->words[xorshift(rng) % words] += 1;
          if (seats[xorshift(rng) % nseats].take(me, d, share)) break;
          if (stop.load(std::memory_order_relaxed)) break;
          ++me.ops;
        }
      }));
    }
    auto t0 = BenchClock::now();
    gate.open();
    P::sleep_for(duration);
    stop.store(true, std::memory_order_relaxed);
    elapsed = seconds_since(t0);
    for (auto& s : seats) s.close();
    for (auto& h : hs) h.join();
    for (auto& c : ctxs) {
      ops += c.ops;
      migrations += c.migrations;
    }
  });
  out.set("Mops_per_s", static_cast<double>(ops) / elapsed / 1e6);
  out.set("migrations_pct",
          ops ? 100.0 * static_cast<double>(migrations) / static_cast<double>(ops) : 0);
}

// ---------------------------------------------------------------------------------------
// transfer: one fiber leads; it starts an epoch and busy-waits (never yielding) until every
// other fiber has seen it, then picks the next leader at random. The others yield, see the
// epoch, acknowledge it, and then yield again ("yield") or park until the leader wakes them
// ("park"). The delay of an epoch (start to last acknowledgement) measures how long a ready
// fiber can wait: its maximum is the fairness figure. An epoch longer than `stall` ends the
// run: "stalls" is then 1 and the maximum delay is reported as `stall` (a lower bound).
// With leader_yields the leader yields while it waits instead of spinning (not in the thesis:
// a cooperative leader, which also works on one processor).

// One transfer run's shared state; lead() and follow() are one turn of a fiber.
template <typename P>
struct Transfer {
  struct alignas(64) Member {
    std::atomic<uint64_t> idx{0};
    typename P::Semaphore sem{0};
  };
  unsigned fibers;
  uint64_t transfers;
  bool park, leader_yields;
  int64_t stall_ns;
  std::deque<Member> m;
  std::atomic<uint64_t> lead_idx{0};
  std::atomic<unsigned> leader{0};
  std::atomic<bool> estop{false};
  typename P::Semaphore done{0};
  uint64_t rng = 0x2545F4914F6CDD1Dull;  // the leader's, one leader at a time
  int64_t max_ns = 0, sum_ns = 0;
  uint64_t epochs = 0;
  bool stalled = false;
  std::vector<int64_t> delays;

  Transfer(unsigned n, uint64_t t, bool pk, bool ly, std::chrono::milliseconds stall)
      : fibers(n),
        transfers(t),
        park(pk),
        leader_yields(ly),
        stall_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(stall).count()),
        m(n) {
    delays.reserve(transfers);
    leader.store(static_cast<unsigned>(xorshift(rng) % fibers));
  }

  bool over() const {
    return lead_idx.load(std::memory_order_acquire) > transfers ||
           estop.load(std::memory_order_acquire);
  }

  // Waits (spinning or yielding) until fiber i has seen `epoch`; false on a stall.
  bool await_ack(unsigned i, uint64_t epoch, int64_t t0) {
    for (unsigned spins = 0; m[i].idx.load(std::memory_order_acquire) != epoch; ++spins) {
      if (leader_yields) {
        P::yield();
      } else {
        cpu_pause();
      }
      if (spins % 256 == 0 && now_ns() - t0 > stall_ns) return false;
    }
    return true;
  }

  void lead(unsigned me) {
    uint64_t epoch = lead_idx.fetch_add(1, std::memory_order_acq_rel) + 1;
    m[me].idx.store(epoch, std::memory_order_release);
    if (epoch > transfers) {
      done.release();
      return;
    }
    int64_t t0 = now_ns();
    for (unsigned i = 0; i < fibers; ++i) {
      if (!await_ack(i, epoch, t0)) {
        stalled = true;
        max_ns = std::max(max_ns, stall_ns);
        estop.store(true, std::memory_order_release);
        done.release();
        return;
      }
    }
    int64_t d = now_ns() - t0;
    max_ns = std::max(max_ns, d);
    sum_ns += d;
    delays.push_back(d);
    ++epochs;
    leader.store(static_cast<unsigned>(xorshift(rng) % fibers), std::memory_order_release);
    if (park) {
      for (unsigned i = 0; i < fibers; ++i) {
        if (i != me) m[i].sem.release();
      }
    }
  }

  void follow(unsigned me) {
    P::yield();
    uint64_t epoch = lead_idx.load(std::memory_order_acquire);
    if (epoch == m[me].idx.load(std::memory_order_relaxed)) return;  // nothing new
    m[me].idx.fetch_add(1, std::memory_order_acq_rel);               // acknowledge
    if (park) {
      m[me].sem.acquire();
    } else {
      P::yield();
    }
  }
};

template <typename P>
void transfer_bench(const RunConfig& cfg, unsigned fibers, uint64_t transfers, bool park,
                    bool leader_yields, std::chrono::milliseconds stall, Figures& out) {
  double elapsed = 0;
  int64_t max_ns = 0, sum_ns = 0;
  uint64_t epochs = 0;
  bool stalled = false;
  std::vector<int64_t> delays;
  P::run(cfg, [&] {
    Transfer<P> t(fibers, transfers, park, leader_yields, stall);
    Gate gate;
    std::vector<typename P::Handle> hs;
    for (unsigned i = 0; i < fibers; ++i) {
      hs.push_back(P::spawn([&, i] {
        gate.wait<P>();
        while (!t.over()) {
          if (t.leader.load(std::memory_order_acquire) == i) {
            t.lead(i);
          } else {
            t.follow(i);
          }
        }
      }));
    }
    auto t0 = BenchClock::now();
    gate.open();
    t.done.acquire();
    elapsed = seconds_since(t0);
    for (auto& mm : t.m) mm.sem.release();
    for (auto& h : hs) h.join();
    max_ns = t.max_ns, sum_ns = t.sum_ns, epochs = t.epochs, stalled = t.stalled;
    delays = std::move(t.delays);
  });
  std::sort(delays.begin(), delays.end());
  out.set("max_delay_us", static_cast<double>(max_ns) / 1e3);
  out.set("p99_delay_us",
          delays.empty() ? 0 : static_cast<double>(delays[delays.size() * 99 / 100]) / 1e3);
  out.set("mean_delay_us",
          epochs ? static_cast<double>(sum_ns) / 1e3 / static_cast<double>(epochs) : 0);
  out.set("transfers_per_s", static_cast<double>(epochs) / elapsed);
  out.set("stalls", stalled ? 1 : 0);
}

// ---------------------------------------------------------------------------------------
// lock: `fibers` fibers share one mutex until `total` acquisitions are done. Critical
// section: bump the shared count and write 8 shared cache lines (and, with cs_yield, yield
// while holding the lock). Outside it: ~64 PRNG rounds of local work, then a yield (one
// processor never preempts a fiber, so without one the others would never get a turn).
// Fairness: the coefficient of variation of per-fiber acquisitions (0: all equal).

template <typename P, typename M, typename... A>
void lock_bench(const RunConfig& cfg, unsigned fibers, uint64_t total, bool cs_yield, Figures& out,
                A... mutex_args) {
  struct alignas(64) Count {
    uint64_t n = 0;
  };
  struct alignas(64) Shared {
    uint64_t acquired = 0;
    uint64_t lines[8 * 8] = {};
  };
  double elapsed = 0;
  std::vector<Count> counts(fibers);
  P::run(cfg, [&] {
    M mu(mutex_args...);
    Shared shared;
    Gate gate;
    std::vector<typename P::Handle> hs;
    for (unsigned i = 0; i < fibers; ++i) {
      hs.push_back(P::spawn([&, i] {
        gate.wait<P>();
        uint64_t rng = 0x9E3779B97F4A7C15ull * (i + 1);
        while (true) {
          mu.lock();
          if (shared.acquired >= total) {
            mu.unlock();
            break;
          }
          ++shared.acquired;
          for (unsigned k = 0; k < 8; ++k) shared.lines[k * 8] += k;
          if (cs_yield) P::yield();
          mu.unlock();
          ++counts[i].n;
          local_work(rng, 64);
          P::yield();
        }
      }));
    }
    auto t0 = BenchClock::now();
    gate.open();
    for (auto& h : hs) h.join();
    elapsed = seconds_since(t0);
  });
  double mean = static_cast<double>(total) / fibers, var = 0;
  for (auto& c : counts)
    var += (static_cast<double>(c.n) - mean) * (static_cast<double>(c.n) - mean);
  out.set("Macq_per_s", static_cast<double>(total) / elapsed / 1e6);
  out.set("cv", std::sqrt(var / fibers) / mean);
}

// ---------------------------------------------------------------------------------------
// wake latency: a fiber parks on a semaphore; a thread outside the runtime posts it every
// `spacing` (jittered +-50%), by then every processor has gone idle, and the fiber records how
// long after the post it ran. With busy_us > 0 the waker is instead a fiber of the runtime
// that posts and then keeps its processor busy for busy_us before it waits for the
// acknowledgement: how soon does an idle processor run the woken fiber? CPU is the process's
// CPU time over the run, in % of one core (the cost of spinning before sleeping).

template <typename P>
void wake_bench(const RunConfig& cfg, unsigned samples, unsigned spacing_us, unsigned busy_us,
                int waker_cpu, Figures& out) {
  constexpr unsigned kWarmup = 5;
  std::vector<int64_t> lat(samples + kWarmup);
  double cpu = 0, wall = 0;
  P::run(cfg, [&] {
    typename P::Semaphore sem{0}, ack_sem{0};
    std::atomic<int64_t> posted{0};
    std::atomic<uint32_t> ack{0};
    unsigned n = samples + kWarmup;
    auto target = P::spawn([&] {
      for (unsigned i = 0; i < n; ++i) {
        sem.acquire();
        lat[i] = now_ns() - posted.load(std::memory_order_acquire);
        if (busy_us > 0) {
          ack_sem.release();
        } else {
          ack.store(i + 1, std::memory_order_release);
          ack.notify_one();
        }
      }
    });
    double cpu0 = process_cpu_seconds();
    auto t0 = BenchClock::now();
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    auto gap = [&] {
      return std::chrono::microseconds(spacing_us / 2 + xorshift(rng) % (spacing_us + 1));
    };
    if (busy_us > 0) {
      for (unsigned i = 0; i < n; ++i) {
        P::sleep_for(gap());
        posted.store(now_ns(), std::memory_order_release);
        sem.release();
        int64_t until = now_ns() + int64_t{busy_us} * 1000;
        while (now_ns() < until) cpu_pause();
        ack_sem.acquire();
      }
    } else {
      std::thread waker([&] {
        if (waker_cpu >= 0) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(waker_cpu, &set);
          sched_setaffinity(0, sizeof set, &set);
        }
        for (unsigned i = 0; i < n; ++i) {
          std::this_thread::sleep_for(gap());
          posted.store(now_ns(), std::memory_order_release);
          sem.release();
          for (uint32_t a; (a = ack.load(std::memory_order_acquire)) != i + 1;) ack.wait(a);
        }
      });
      target.join();
      waker.join();
    }
    if (busy_us > 0) target.join();
    wall = seconds_since(t0);
    cpu = process_cpu_seconds() - cpu0;
  });
  std::vector<int64_t> v(lat.begin() + kWarmup, lat.end());
  std::sort(v.begin(), v.end());
  auto pct = [&](double q) {
    return static_cast<double>(v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))]) /
           1e3;
  };
  out.set("p50_us", pct(0.50));
  out.set("p99_us", pct(0.99));
  out.set("max_us", static_cast<double>(v.back()) / 1e3);
  out.set("cpu_pct", 100.0 * cpu / wall);
}

// ---------------------------------------------------------------------------------------
// idle: the main fiber sleeps for `duration`, nothing else runs; CPU time in % of one core.

template <typename P>
void idle_bench(const RunConfig& cfg, std::chrono::milliseconds duration, Figures& out) {
  double cpu = 0, wall = 0;
  P::run(cfg, [&] {
    P::sleep_for(std::chrono::milliseconds(50));  // let every processor settle
    double cpu0 = process_cpu_seconds();
    auto t0 = BenchClock::now();
    P::sleep_for(duration);
    wall = seconds_since(t0);
    cpu = process_cpu_seconds() - cpu0;
  });
  out.set("cpu_pct", 100.0 * cpu / wall);
}

}  // namespace weft::bench
