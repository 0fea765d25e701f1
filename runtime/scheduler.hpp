// The scheduler: a Runtime of N processors (kernel threads) that run fibers.
//
// Each processor has a local run queue (stealable), a LIFO slot for the fiber it just woke,
// a timer heap and a driver to block in. Work from outside the runtime, and overflow, goes
// to a shared global queue. Every fiber is stamped when it becomes ready (Fiber::ready_at:
// the processor's cached cycle count, see clock_), wherever it is queued.
//
// Picking the next fiber, in order: every 61st pick the global queue first (so outside work
// and overflow cannot starve); *help* (below), at most once per help_age / 4; the LIFO
// slot, at most 16 times in a row (a ping-pong pair keeps its cache-warm hand-off, but
// cannot starve the queue); the local queue head; then the slow path: driver poll and due
// timers, the global queue, stealing half of another processor's queue, `spin` rounds of
// all that, and finally parking in the driver until the next timer. Yield puts the fiber at
// the tail of the local queue.
//
// Helping (after the Cforall scheduler's relaxed FIFO): stealing alone moves work only when
// a processor runs dry, so a fiber queued behind one that never yields would wait forever
// while every other processor stays busy. So a busy processor also looks, at most once per
// help_age / 4 (checked every 32nd pick, when it refreshes its cycle count), at one other
// processor chosen at random: if that one's LIFO slot or queue head has been ready for
// longer than `help_age` and more than twice as long as this processor's own oldest ready
// fiber, it takes it (and up to 7 more from that queue that are as old) and runs it. That
// is for a victim that has picked nothing since the previous look (it runs a fiber that
// does not yield); one that progresses reaches its queue by itself, so its head must have
// waited 10 help_ages (moving fibers between busy processors on every hiccup cost churn
// 12%). A ready fiber therefore waits about 1.25 help_age behind a stuck processor, plus its
// helper's current fiber. A processor going to sleep while another's LIFO slot holds a
// fiber sleeps at most help_age (the default, 100 us, when helping is off), so that slot is
// looked at again even when all sleep. A look costs
// a few loads of the other processor's queue lines (rationed in time because they are cache misses
// for both processors); a take is one CAS, the same one stealing uses. Each processor counts what
// it took (helped()).
//
// Who touches what: the LIFO slot and the local queue's head are CAS targets for the owner,
// thieves and helpers alike; the tail, clock_, tick_ and the stamps given are the owner's.
// Stamps are read racily (a stale one only hastens or delays one look).
//
// Idle protocol (after Go and Tokio): at most half the processors search for work at once.
// Whoever makes work available wakes one parked processor if none is searching (a pusher
// still registered as a sleeper, inside its own park because its driver reaped a
// completion there, counts itself as the one woken, with no system call); a searcher
// that finds work and was the last one wakes another if any other work is ready anywhere (a
// queue, the global queue, another processor's LIFO slot): a pusher that saw it searching
// woke nobody, and the searcher may not have taken that fiber. A processor that parks registers as
// a sleeper, stops searching, then re-checks every queue before blocking; either it sees
// the new work or the pusher sees it asleep and not searching: no lost wake-up. That takes
// a full barrier on both sides, between the pusher's push and its reads of the sleeper and
// searcher counts, and between the sleeper's registration (and its leaving the searchers)
// and its re-check. A push to another processor's queue or the
// global one uses a seq_cst read-modify-write; a push to the processor's own queue (every
// yield) has its barrier made asymmetric with membarrier(2): the sleeper's call makes every
// running processor execute one, so the push itself needs only the compiler's (without
// membarrier, a fence after the push).
//
// Timers (after Go's checkTimers in stealWork): each processor has two heaps. Its fiber
// wake-ups (sleeps and timed waits, Waiter::wait_until) are fired by whichever processor
// first finds them due: the owner when it polls (every 61 picks, or idle), an idle or
// searching processor in every round of its search, a busy one at most every 25 us. So a
// wake-up no longer waits for a processor held by a fiber that never yields (3 processors:
// a 1 ms sleep overslept by 44 ms while two slept). A parked processor's timeout is the
// earliest wake-up of any processor, and arming one that becomes its heap's earliest wakes
// a sleeper when none would wake by then (a seq_cst read-modify-write of the sleeper count
// on both sides, as for pushes, so the sleeper's plan or the armer's check sees the other).
// The price: each sleeper also wakes for other processors' timers that their owners fire
// themselves, one wasted wake-up per such timer and sleeper (timed waits are rare in the
// server, whose I/O deadlines live in the other heap; weft-load's session clock is the
// busiest user).
// A processor's I/O deadlines (io_timers_, the driver's) are fired by it alone: expiry
// cancels the operation on its own ring, and its ring's completions, too, are reaped only
// by it, so an I/O wait on a held processor ends when that processor next polls.
//
// Shutdown order: the main fiber returns -> the runtime is marked stopping and every driver
// is unparked -> each processor finishes the fiber it runs and leaves its loop -> run()
// joins the threads. Fibers still alive then are counted and reported; their stacks and
// control blocks are released with the Runtime. Destroy the Runtime only after run().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/driver.hpp"
#include "runtime/fiber.hpp"
#include "runtime/run_queue.hpp"
#include "runtime/stack_pool.hpp"
#include "runtime/timer.hpp"

namespace weft::rt {

struct RuntimeOptions {
  unsigned processors = 0;  // 0: one per online CPU
  bool pin = false;         // pin processor i to the i-th allowed CPU
  std::size_t stack_size = 64 * 1024;
  // Slow-path rounds before parking. 100 suits a client such as weft-load; the server's
  // default is 20 (runtime.spin, measured: docs/benchmarks.md, "Idle spin").
  unsigned spin = 100;
  // How long a ready fiber may wait on a busy processor before another busy processor takes
  // it (see "Helping"). Picked: ten times a loaded queue's usual wait, far under a
  // client's patience; to be measured against the transfer benchmark and the locality cost.
  // Zero turns helping off (work moves only to a processor that runs dry).
  Duration help_age = std::chrono::microseconds(100);
  // Makes each processor's driver; null: the basic driver (no I/O).
  std::function<std::unique_ptr<Driver>(unsigned index)> make_driver;
};

class Runtime;
class IoDriver;

class Processor {
 public:
  Processor(Runtime& rt, unsigned index, std::unique_ptr<Driver> driver);
  ~Processor();
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;

  /// Returns the processor running the calling thread, or nullptr.
  static Processor* current();

  /// Returns this processor's index (0..N-1).
  unsigned index() const { return index_; }
  /// Returns this processor's driver.
  Driver& driver() { return *driver_; }
  /// Returns this processor's driver as an I/O driver, or nullptr when it does no I/O.
  IoDriver* io_driver() { return io_driver_; }
  /// Returns this processor's fiber wake-ups (the timers of timed waits), which any
  /// processor fires once due (see "Timers" above).
  TimerHeap& timers() { return timers_; }
  /// Owner thread: arms a fiber wake-up in timers(), and makes sure a sleeping processor
  /// will wake for it if this one is then held by a fiber that never yields.
  void arm_timer(TimerEntry* e);
  /// Returns the runtime this processor belongs to.
  Runtime& runtime() { return rt_; }
  /// Returns the fiber running here, or nullptr in the scheduler context.
  Fiber* running() const { return current_; }
  /// Returns how many scheduling rounds (picks) this processor has made (approximate; any
  /// thread).
  uint64_t rounds() const { return ticks_published_.load(std::memory_order_relaxed); }
  /// Returns how long this processor's oldest ready fiber (queue head or LIFO slot) has
  /// waited, 0 when none: its queueing delay now, for load shedding (any thread; approximate).
  Duration queue_delay() const;
  /// Returns how many fibers this processor took from busy processors by helping (any
  /// thread).
  uint64_t helped() const { return helped_.load(std::memory_order_relaxed); }
  /// Returns the number of fibers in the local queue (approximate; any thread).
  uint32_t queue_length() const {
    return local_.size() + (lifo_.load(std::memory_order_relaxed) ? 1 : 0);
  }

  // --- used by the fiber functions and the sync primitives; owner thread only -------------------
  /// Makes f ready on this processor: in the LIFO slot when `lifo`, else the queue tail.
  void schedule(Fiber* f, bool lifo);
  /// Switches away from the running fiber, leaving it parked (see fiber.hpp).
  void park_current();
  /// Switches away from the running fiber, leaving it at the queue tail.
  void yield_current();
  /// Switches from the running fiber to `child` (fresh), leaving the caller in the LIFO slot.
  void dispatch(Fiber* child);
  /// Ends the running fiber; never returns.
  [[noreturn]] void exit_current();
  /// Polls the driver and fires due timers without blocking.
  void poll_events();
  /// Reads the clock and fires this processor's due timers (poll_events without the driver).
  void fire_due_timers();
  /// Returns the time of this processor's last poll (see coarse_now()).
  TimePoint round_time() const { return round_time_; }
  /// Runs the action the previously running fiber left (first thing a fresh fiber does).
  void after_switch_public();

 private:
  friend class Runtime;
  friend Fiber* detail::allocate_fiber(Runtime*);
  enum class Pending : uint8_t { none, park, requeue, lifo, exit };

  void push_local(Fiber* f);  // the local queue's tail, ordered before notify_work's loads
  void run();                 // the scheduler loop, on the thread's own stack
  Fiber* pick_fast();         // local work only, never blocks
  Fiber* find_work();         // slow path; null when the runtime stops
  Fiber* steal();
  Fiber* help();
  unsigned take_old(Processor& victim, int64_t now_cycles, int64_t limit);
  int64_t oldest_own_stamp(int64_t now_cycles) const;
  uint64_t next_random();
  void park_idle();
  void switch_from(Fiber* cur, Pending action, Fiber* next);
  void resume(ExecContext& from, Fiber* next, bool from_exiting);
  void after_switch();
  void release_fiber(Fiber* f);
  bool start_searching();
  void stop_searching(bool found_work);
  void fire_others_timers(int64_t now_ns);
  int64_t earliest_timer_anywhere() const;

  Runtime& rt_;
  unsigned index_;
  std::unique_ptr<Driver> driver_;
  IoDriver* io_driver_;
  bool polls_by_system_call_;  // driver_->poll_makes_a_system_call(), asked once
  ExecContext sched_ctx_;
  Fiber* current_ = nullptr;
  // The LIFO slot: owner exchanges; a thief may take it when it sat there while the owner
  // made no scheduling progress (the owner runs a long fiber), like Go's runnext.
  std::atomic<Fiber*> lifo_{nullptr};
  unsigned lifo_streak_ = 0;
  std::atomic<uint32_t> fence_word_{0};       // schedule()'s barrier under TSan, as an RMW it sees
  std::atomic<uint64_t> ticks_published_{0};  // tick_, for thieves judging progress
  std::atomic<uint64_t> helped_{0};           // owner writes, anyone reads
  struct VictimView {
    Fiber* lifo = nullptr;
    uint64_t ticks = 0;
  };
  std::vector<VictimView> victims_;  // what this processor saw of each other at its last steal
  uint64_t tick_ = 0;
  // cycles() as of every 32nd pick, poll or wake-up: the stamp given to the fibers this
  // processor makes ready (a read of the counter costs ~20 ns here, as much as half a yield).
  // A stamp is at most 32 picks, or the run of one fiber, too old; a fiber made ready by one
  // that has run long looks older, which is what its waiting means anyway.
  uint64_t clock_ = 0;
  uint64_t last_look_ = 0;        // clock_ at the latest help look
  uint64_t last_timer_look_ = 0;  // clock_ at the latest look at others' due timers
  TimePoint round_time_{};
  Pending pending_ = Pending::none;
  Fiber* pending_fiber_ = nullptr;
  bool searching_ = false;
  uint64_t rng_;
  LocalQueue local_;
  TimerHeap timers_;     // fiber wake-ups: any processor fires them
  TimerHeap io_timers_;  // the driver's operation deadlines: only this processor fires them
  // When this processor, parked, will wake by itself (ns; kNone while awake or parked with
  // no timeout): arm_timer's judge of whether a sleeper covers a new timer.
  std::atomic<int64_t> plan_ns_{TimerHeap::kNone};
  StackPool::Cache stack_cache_;
  std::vector<Fiber*> fiber_cache_;
  std::thread thread_;
};

class Runtime {
 public:
  /// Makes a runtime; no thread starts before run().
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Runs `main` on a fiber named "main" with the processors started, and returns when it
  /// has returned and every processor has stopped. Call once, from a thread outside the
  /// runtime; that thread becomes processor 0.
  template <typename F>
  void run(F&& main) {
    Fiber* f = detail::prepare(this, std::forward<F>(main), SpawnOptions{"main"});
    f->is_main = true;
    run_main(f);
  }

  /// Starts `fn` on a new fiber from any thread (outside fibers, or another runtime's).
  template <typename F>
  FiberHandle spawn(F&& fn, SpawnOptions opts = {}) {
    Fiber* f = detail::prepare(this, std::forward<F>(fn), opts);
    detail::start_fiber(this, f, Launch::post);
    return FiberHandle{f};
  }

  /// Returns the number of processors.
  unsigned processors() const { return static_cast<unsigned>(procs_.size()); }
  /// Returns processor i.
  Processor& processor(unsigned i) { return *procs_[i]; }
  /// Returns the options the runtime was made with (processors resolved).
  const RuntimeOptions& options() const { return options_; }
  /// Returns the number of fibers spawned and not yet finished.
  std::size_t live_fibers() const { return live_.load(std::memory_order_relaxed); }
  /// Returns how many fibers were still alive when the last run() ended.
  std::size_t leftover_fibers() const { return leftover_; }
  /// Returns the stack pool (stack size, mapped count).
  const StackPool& stacks() const { return stacks_; }

  /// Unmaps the pooled fiber stacks left unused since the last call, keeping `keep`
  /// (StackPool::trim); returns how many. Any thread.
  std::size_t trim_stacks(std::size_t keep) { return stacks_.trim(keep); }
  /// Returns whether the runtime is shutting down.
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

 private:
  friend class Processor;
  friend Fiber* detail::allocate_fiber(Runtime*);
  friend void detail::start_fiber(Runtime*, Fiber*, Launch);
  friend void detail::release_ref(Fiber*);
  friend void detail::unpark(Fiber*, bool);

  void run_main(Fiber* main);
  void push_global(Fiber* f);
  void notify_work(bool ordered);
  void wake_one();
  void cover_timer(int64_t deadline_ns);
  void begin_stop();
  Fiber* allocate_fiber_block();
  void free_fiber_block(Processor* p, Fiber* f);
  bool any_work_visible() const;
  bool any_lifo_occupied(const Processor* except) const;

  RuntimeOptions options_;
  std::vector<std::unique_ptr<Processor>> procs_;
  GlobalQueue global_;
  StackPool stacks_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> live_{0};
  std::atomic<uint64_t> next_id_{1};
  std::size_t leftover_ = 0;
  int64_t help_age_cycles_ = 0;        // options_.help_age in cycles()
  uint64_t look_interval_cycles_ = 0;  // the least time between two help looks
  uint64_t timer_look_cycles_ = 0;     // the least time between two looks at others' timers
  int64_t lifo_nap_ns_ = 0;            // the longest idle nap while a LIFO slot is occupied
  bool park_barrier_ = false;          // park_idle runs membarrier(2) (registered; >1 processor)
  bool light_push_ = false;            // push_local needs only a compiler barrier (see there)

  // Start barrier: processors wait until every driver is attached.
  std::mutex start_mu_;
  std::condition_variable start_cv_;
  std::size_t attached_ = 0;

  // Idle bookkeeping (see the header comment).
  std::atomic<uint32_t> searching_{0};
  std::atomic<uint32_t> sleeping_{0};
  std::mutex idle_mu_;
  std::vector<Processor*> sleepers_;

  // Fiber control blocks, allocated in chunks and kept until the runtime dies.
  std::mutex blocks_mu_;
  std::vector<std::unique_ptr<Fiber[]>> block_chunks_;
  std::vector<Fiber*> free_blocks_;
  std::vector<Fiber*> all_blocks_;
};

}  // namespace weft::rt
