// The scheduler loop, the idle protocol and the fiber lifecycle (see scheduler.hpp).
#include "runtime/scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/io_driver.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {
namespace {

// Picked like Go and Tokio (61: prime, so it does not beat with other periodic patterns).
constexpr uint64_t kGlobalInterval = 61;
// How often a busy processor polls its driver and timers between queue drains; picked, to
// be measured against I/O latency under load.
constexpr uint64_t kPollInterval = 61;
// Consecutive LIFO hand-offs (LIFO-slot picks and dispatch spawns) before the queue head
// gets a turn. Tokio bounds its slot at 3; we allow 16 so dispatch keeps a spawn tree
// depth-first (few live stacks) while the oldest ready fiber still waits at most 16
// hand-offs. Picked, to be measured (skynet's peak RSS against transfer's maximum delay).
constexpr unsigned kMaxLifoStreak = 16;
// How often (in picks) a busy processor refreshes its cycle count (clock_), and so how
// stale a ready stamp may be. A read costs ~20 ns here: every 32nd pick keeps it under 1 ns
// a pick. Measured with runtime_bench's yield rows (docs/benchmarks.md, "Helping").
constexpr uint64_t kClockInterval = 32;
// Fibers one help look may take from another processor's queue (the first runs at once,
// the others queue here): a processor stuck in a long fiber has its whole queue waiting.
constexpr unsigned kHelpBatch = 8;
// Looks per help_age: a fiber waits at most about help_age plus help_age / kLookPerAge
// before a busy processor notices it.
constexpr int64_t kLookPerAge = 4;
// A processor that makes progress has its queue helped only once the head has waited this
// many help_ages: sooner, every hiccup (a preempted vCPU, a burst of wake-ups) would move
// fibers and their caches back and forth. churn: 6,921 fibers moved per run with 1, 0 with 10.
constexpr int64_t kBusyVictimAges = 10;
// Fibers taken from the global queue at once when a processor runs dry.
constexpr unsigned kGlobalBatch = 32;
// How often (at most) a busy processor looks for other processors' due fiber wake-ups:
// they are late by this much at worst when their own processor is held. A look is one load
// per processor; picked like the help look interval.
constexpr int64_t kTimerLookNs = 25'000;
// Control blocks per chunk, and per-processor cache bound.
constexpr std::size_t kBlockChunk = 64;
constexpr std::size_t kBlockCacheMax = 256;

thread_local Processor* tls_processor = nullptr;

void default_exception_hook(const char* name, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft: fiber '%s' ended by an exception: %s\n", name, e.what());
  } catch (...) {
    std::fprintf(stderr, "weft: fiber '%s' ended by an exception of unknown type\n", name);
  }
}

std::atomic<ExceptionHook> g_exception_hook{&default_exception_hook};

void fiber_entry(void*, void* arg) {
  context_entered();
  Processor::current()->after_switch_public();
  Fiber* f = static_cast<Fiber*>(arg);
  try {
    f->invoke(f);
  } catch (...) {
    g_exception_hook.load(std::memory_order_acquire)(f->name[0] ? f->name : "(unnamed)",
                                                     std::current_exception());
  }
  Processor::current()->exit_current();
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
    }
  }
  return cpus;
}

void pin_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace

ExceptionHook set_exception_hook(ExceptionHook hook) {
  return g_exception_hook.exchange(hook ? hook : &default_exception_hook);
}

// ---------------------------------------------------------------------------------------
// Processor

Processor::Processor(Runtime& rt, unsigned index, std::unique_ptr<Driver> driver)
    : rt_(rt),
      index_(index),
      driver_(std::move(driver)),
      io_driver_(dynamic_cast<IoDriver*>(driver_.get())),
      polls_by_system_call_(driver_->poll_makes_a_system_call()),
      rng_(0x9E3779B97F4A7C15ull * (index + 1)) {}

Processor::~Processor() = default;

// Not inlined, and with a compiler barrier: a fiber may resume on another thread, so the
// thread-local must be read afresh after every switch, never cached across one.
[[gnu::noinline]] Processor* Processor::current() {
  Processor* p = tls_processor;
  asm volatile("" ::: "memory");
  return p;
}

void Processor::run() {
  tls_processor = this;
  clock_ = cycles();
  adopt_thread_context(sched_ctx_);
  driver_->attach(io_timers_);
  {
    // The main fiber starts only once every processor has its driver (so an io_uring
    // setup problem shows at start, and no fiber depends on a processor not yet there).
    std::unique_lock lock(rt_.start_mu_);
    ++rt_.attached_;
    rt_.start_cv_.notify_all();
    rt_.start_cv_.wait(lock, [&] { return rt_.attached_ == rt_.procs_.size(); });
  }
  while (Fiber* f = find_work()) {
    current_ = f;
    resume(sched_ctx_, f, false);
    // Back on this thread's own stack: finish what the fiber that switched here left.
    after_switch();
  }
  driver_->flush();  // the last fibers' detached closes
  current_ = nullptr;
  tls_processor = nullptr;
}

void Processor::resume(ExecContext& from, Fiber* next, bool from_exiting) {
  if (!next->stack.bottom) {
    try {
      next->stack = rt_.stacks_.allocate(&stack_cache_);
    } catch (const std::bad_alloc&) {
      // Scheduler state is mid-switch here; there is no sane way to continue.
      std::fputs("weft: cannot map a fiber stack: out of memory\n", stderr);
      std::abort();
    }
    prepare_context(next->ctx, next->stack.bottom, next->stack.top, &fiber_entry, next);
  }
  switch_context(from, next->ctx, nullptr, from_exiting);
}

void Processor::switch_from(Fiber* cur, Pending action, Fiber* next) {
  pending_ = action;
  pending_fiber_ = cur;
  bool exiting = action == Pending::exit;
  if (next) {
    current_ = next;
    resume(cur->ctx, next, exiting);
  } else {
    current_ = nullptr;
    switch_context(cur->ctx, sched_ctx_, nullptr, exiting);
  }
  // Resumed: possibly on another processor, so `this` is stale here.
  Processor::current()->after_switch();
}

void Processor::after_switch() {
  Fiber* f = pending_fiber_;
  Pending action = pending_;
  pending_ = Pending::none;
  pending_fiber_ = nullptr;
  switch (action) {
    case Pending::none:
      break;
    case Pending::requeue:
      f->ready_at.store(clock_, std::memory_order_relaxed);
      push_local(f);
      rt_.notify_work(false);
      break;
    case Pending::lifo:
      schedule(f, true);
      break;
    case Pending::park: {
      uint32_t expected = Fiber::kEmpty;
      if (!f->park_state.compare_exchange_strong(expected, Fiber::kParked,
                                                 std::memory_order_acq_rel)) {
        // Unparked while switching out: consume the permit and run it again.
        f->park_state.store(Fiber::kEmpty, std::memory_order_relaxed);
        schedule(f, true);
      }
      break;
    }
    case Pending::exit:
      release_fiber(f);
      break;
  }
}

void Processor::release_fiber(Fiber* f) {
  // TSan's fiber state cannot be reused: its shadow call stack still holds the frames of
  // the fiber that ended by switching away. So it is made and destroyed per fiber.
  release_context(f->ctx);
  rt_.stacks_.release(&stack_cache_, f->stack);
  f->stack = Stack{};
  bool is_main = f->is_main;
  rt_.live_.fetch_sub(1, std::memory_order_relaxed);
  detail::release_ref(f);
  if (is_main) rt_.begin_stop();
}

void Processor::schedule(Fiber* f, bool lifo) {
  f->ready_at.store(clock_, std::memory_order_relaxed);
  if (lifo) {
    // seq_cst: a locked exchange on x86 either way, and it orders the push before
    // notify_work's loads (below).
    Fiber* displaced = lifo_.exchange(f, std::memory_order_seq_cst);
    if (displaced) local_.push(displaced, rt_.global_);
    // Even with nothing displaced, an idle processor may be needed: if the running fiber
    // keeps this processor busy, a thief takes f from the slot (see steal()).
  } else {
    push_local(f);
  }
  rt_.notify_work(false);
}

void Processor::push_local(Fiber* f) {
  local_.push(f, rt_.global_);
  // The push is a plain release store, which x86 may hold in its store buffer past the
  // loads in notify_work: a processor going to sleep at that moment would miss the push in
  // its re-check while we miss its sleep, and f would wait until this processor got to it
  // (io_bench's wake group saw one-second stalls behind a busy waker), or forever when this
  // processor then runs a fiber that never yields (a yield's requeue, too, comes here).
  // The barrier is asymmetric where the kernel has membarrier(2): the sleeper makes every
  // running processor execute one (park_idle), so the push, on every yield, needs only the
  // compiler's. A fence here made a yield 1.4-1.6x slower.
  if (rt_.light_push_) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
#if defined(WEFT_TSAN)
    // TSan does not model fences (GCC warns); a seq_cst RMW is a full barrier too.
    fence_word_.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
  }
}

Fiber* Processor::pick_fast() {
  if (rt_.stopping_.load(std::memory_order_relaxed)) return nullptr;
  ++tick_;
  if (tick_ % kGlobalInterval == 0) {
    if (Fiber* f = rt_.global_.pop()) return f;
  }
  if (tick_ % kPollInterval == 0) poll_events();
  ticks_published_.store(tick_, std::memory_order_relaxed);
  if (tick_ % kClockInterval == 0 && rt_.procs_.size() > 1) {
    clock_ = cycles();
    if (clock_ - last_timer_look_ >= rt_.timer_look_cycles_) {
      last_timer_look_ = clock_;
      fire_others_timers(to_ns(now()));
    }
    // A look costs a few cache misses on another processor's queue lines (and makes that
    // processor's next writes miss too), so it is rationed in time, not in picks.
    if (clock_ - last_look_ >= rt_.look_interval_cycles_) {
      last_look_ = clock_;
      if (Fiber* f = help()) return f;
    }
  }
  if (lifo_.load(std::memory_order_relaxed)) {
    Fiber* f = lifo_.exchange(nullptr, std::memory_order_acq_rel);
    if (f) {
      if (lifo_streak_ < kMaxLifoStreak) {
        ++lifo_streak_;
        return f;
      }
      local_.push(f, rt_.global_);
    }
  }
  lifo_streak_ = 0;
  return local_.pop();
}

void Processor::poll_events() {
  driver_->poll();
  fire_due_timers();
}

void Processor::fire_due_timers() {
  round_time_ = now();
  clock_ = cycles();
  int64_t t = to_ns(round_time_);
  if (timers_.earliest() <= t) timers_.fire_due(t);
  if (io_timers_.earliest() <= t) io_timers_.fire_due(t);
}

void Processor::fire_others_timers(int64_t now_ns) {
  // The woken fibers become ready here (Waiter's callback unparks onto the firing processor).
  for (const auto& p : rt_.procs_) {
    if (p.get() != this && p->timers_.earliest() <= now_ns) p->timers_.fire_due(now_ns);
  }
}

int64_t Processor::earliest_timer_anywhere() const {
  int64_t next = io_timers_.earliest();
  for (const auto& p : rt_.procs_) next = std::min(next, p->timers_.earliest());
  return next;
}

void Processor::arm_timer(TimerEntry* e) {
  if (timers_.add(e) && rt_.procs_.size() > 1) rt_.cover_timer(e->deadline_ns);
}

Fiber* Processor::find_work() {
  unsigned spins = 0;
  while (true) {
    if (rt_.stopping()) return nullptr;
    Fiber* f = pick_fast();
    if (!f) {
      // Only the first round asks a driver whose poll is a system call (epoll): twenty
      // spin rounds made twenty epoll_pwait2 calls before each sleep, 27 per session at
      // 300 sessions/s, where the sleep's own blocking wait returns as soon as an event
      // comes. The later rounds still look at the clock's timers and the other queues.
      if (spins == 0 || !polls_by_system_call_) {
        poll_events();
      } else {
        fire_due_timers();
      }
      if (rt_.procs_.size() > 1) fire_others_timers(to_ns(round_time_));
      f = pick_fast();
    }
    if (!f) {
      // Take a batch from the global queue, so a burst of outside work spreads out.
      f = rt_.global_.pop();
      for (unsigned i = 1; f && i < kGlobalBatch; ++i) {
        Fiber* more = rt_.global_.pop();
        if (!more) break;
        push_local(more);
      }
    }
    if (!f && start_searching()) f = steal();
    if (f) {
      if (searching_) stop_searching(true);
      return f;
    }
    // At least two rounds: stealing a stuck LIFO slot needs two looks (see steal()).
    if (spins < std::max(rt_.options_.spin, 2u)) {
      ++spins;
      cpu_relax();
      continue;
    }
    park_idle();
    spins = 0;
  }
}

bool Processor::start_searching() {
  if (searching_) return true;
  // At most half the processors search at once: more would only contend on the queues.
  uint32_t s = rt_.searching_.load(std::memory_order_relaxed);
  if (2 * s >= rt_.procs_.size()) return false;
  rt_.searching_.fetch_add(1, std::memory_order_seq_cst);
  searching_ = true;
  return true;
}

void Processor::stop_searching(bool found_work) {
  searching_ = false;
  uint32_t before = rt_.searching_.fetch_sub(1, std::memory_order_seq_cst);
  // The last searcher found work and more is ready anywhere: let another processor look.
  // Anywhere, not only here: a pusher that saw this processor searching woke nobody,
  // trusting it (Go's resetspinning wakes for the same reason), and the fiber it pushed may
  // sit in a queue or LIFO slot this processor did not take, behind a fiber that never
  // yields, while another processor sleeps (3 processors: a fiber waited 16-35 ms instead
  // of 0.05). Not for a lone fiber: waking a processor to find nothing costs two system calls.
  if (found_work && before == 1 && (rt_.any_work_visible() || rt_.any_lifo_occupied(this))) {
    rt_.notify_work(true);
  }
}

Fiber* Processor::steal() {
  std::size_t n = rt_.procs_.size();
  if (victims_.size() != n) victims_.assign(n, VictimView{});
  std::size_t start = next_random() % n;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t vi = (start + i) % n;
    Processor* victim = rt_.procs_[vi].get();
    if (victim == this) continue;
    if (Fiber* f = victim->local_.steal_into(local_)) return f;
    // The LIFO slot only when the same fiber sat in it across two of our looks while its
    // owner picked nothing: the owner is stuck in a long fiber. Taking it sooner would turn
    // every cache-warm hand-off into a cross-processor one.
    Fiber* l = victim->lifo_.load(std::memory_order_acquire);
    uint64_t t = victim->ticks_published_.load(std::memory_order_relaxed);
    VictimView& seen = victims_[vi];
    if (l && l == seen.lifo && t == seen.ticks) {
      Fiber* expected = l;
      if (victim->lifo_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) {
        seen = {};
        return l;
      }
    }
    seen = {l, t};
  }
  return rt_.global_.pop();
}

uint64_t Processor::next_random() {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return rng_;
}

namespace {

// How long f has been ready, in cycles (0 when its stamp is newer than `now_cycles`: another
// core read the counter later, or f was requeued since it was seen).
int64_t ready_age(const Fiber* f, int64_t now_cycles) {
  int64_t at = static_cast<int64_t>(f->ready_at.load(std::memory_order_relaxed));
  return now_cycles > at ? now_cycles - at : 0;
}

}  // namespace

int64_t Processor::oldest_own_stamp(int64_t now_cycles) const {
  int64_t oldest = now_cycles;
  if (Fiber* l = lifo_.load(std::memory_order_relaxed)) {
    oldest = std::min(oldest, now_cycles - ready_age(l, now_cycles));
  }
  if (Fiber* h = local_.peek()) oldest = std::min(oldest, now_cycles - ready_age(h, now_cycles));
  return oldest;
}

Duration Processor::queue_delay() const {
  int64_t t = static_cast<int64_t>(cycles());
  int64_t waited = t - oldest_own_stamp(t);
  return std::chrono::nanoseconds(waited * 1000 / static_cast<int64_t>(cycles_per_us()));
}

Fiber* Processor::help() {
  std::size_t n = rt_.procs_.size();
  if (n < 2) return nullptr;
  if (victims_.size() != n) victims_.assign(n, VictimView{});
  std::size_t vi = (index_ + 1 + next_random() % (n - 1)) % n;
  Processor* victim = rt_.procs_[vi].get();
  Fiber* lifo = victim->lifo_.load(std::memory_order_relaxed);
  uint64_t ticks = victim->ticks_published_.load(std::memory_order_relaxed);
  VictimView& seen = victims_[vi];
  // Stuck: the victim has picked nothing since this processor's previous look (at least
  // help_age / 4 ago), so it runs one fiber that does not yield. A victim that progresses
  // will reach its queue head itself; only a much older head is worth a migration then.
  bool stuck = ticks == seen.ticks;
  seen = {lifo, ticks};
  Fiber* head = victim->local_.peek();
  if (!lifo && !head) return nullptr;
  int64_t t = static_cast<int64_t>(clock_);
  int64_t age = stuck ? rt_.help_age_cycles_ : kBusyVictimAges * rt_.help_age_cycles_;
  int64_t limit = std::max(age, 2 * (t - oldest_own_stamp(t)));
  Fiber* taken = nullptr;
  // A LIFO slot this old means its owner has picked nothing for that long. Take the slot's
  // fiber the way a thief does (one CAS).
  if (lifo && ready_age(lifo, t) > limit) {
    Fiber* expected = lifo;
    if (victim->lifo_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) {
      taken = lifo;
    }
  }
  unsigned n_taken = taken ? 1 : 0;
  if (!taken && head && ready_age(head, t) > limit) {
    taken = victim->local_.pop();
    n_taken = taken ? 1 + take_old(*victim, t, limit) : 0;
  }
  if (n_taken > 0) {
    helped_.store(helped_.load(std::memory_order_relaxed) + n_taken, std::memory_order_relaxed);
  }
  // More than one taken: the rest wait in this queue, and a sleeping processor could run them.
  if (n_taken > 1) rt_.notify_work(false);
  return taken;
}

unsigned Processor::take_old(Processor& victim, int64_t now_cycles, int64_t limit) {
  // The head seen may be gone already; pop() takes whichever fiber is the head now, which
  // has waited at least as long as anything behind it.
  unsigned n = 0;
  while (n + 1 < kHelpBatch) {
    Fiber* next = victim.local_.peek();
    if (!next || ready_age(next, now_cycles) <= limit) break;
    next = victim.local_.pop();
    if (!next) break;
    push_local(next);
    ++n;
  }
  return n;
}

void Processor::park_idle() {
  {
    std::lock_guard lock(rt_.idle_mu_);
    rt_.sleepers_.push_back(this);
    // A seq_cst read-modify-write, paired with the one in notify_work on the same atomic:
    // whichever comes second in its order sees the other, so either the pusher sees us
    // asleep or our re-check below sees its work. (An RMW rather than a fence, because
    // TSan does not model fences.)
    rt_.sleeping_.fetch_add(1, std::memory_order_seq_cst);
  }
  // No longer searching, before the barrier below: a pusher trusts a searching processor
  // to find its work (notify_work wakes nobody while one searches), so its loads after the
  // barrier must see this one stopped, as they see it asleep. Stopped after the barrier, a
  // push made after it could read "searching", wake nobody, and stay unseen by the re-check
  // (its store still in the pusher's store buffer).
  if (searching_) {
    searching_ = false;
    rt_.searching_.fetch_sub(1, std::memory_order_seq_cst);
  }
  // The heavy half of push_local's barrier: every other processor now runs a full barrier,
  // so a push it made before that is visible to the re-check below, and its loads after it
  // see this sleeper, not searching (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED).
  if (rt_.park_barrier_) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  if (!rt_.any_work_visible() && !rt_.stopping()) {
    int64_t timeout = -1;
    // Every processor's fiber wake-ups, not only this one's: their owner may be held by a
    // fiber that never yields (see "Timers" in scheduler.hpp).
    int64_t next = earliest_timer_anywhere();
    int64_t t = to_ns(now());
    if (next != TimerHeap::kNone) timeout = std::max<int64_t>(0, next - t);
    // A fiber in another processor's LIFO slot is not visible work (its owner usually takes
    // it at once), but when that owner stays in a fiber that does not yield only a thief can
    // run it, and the pusher may have seen a searcher (this one) and woken nobody: sleep at
    // most help_age (100 us with helping off) then, and look again (steal() takes a slot
    // that sat across two looks).
    if (rt_.any_lifo_occupied(this)) {
      timeout = timeout < 0 ? rt_.lifo_nap_ns_ : std::min(timeout, rt_.lifo_nap_ns_);
    }
    plan_ns_.store(timeout < 0 ? TimerHeap::kNone : t + timeout, std::memory_order_seq_cst);
    driver_->park(timeout);
    plan_ns_.store(TimerHeap::kNone, std::memory_order_relaxed);
    round_time_ = now();  // coarse_now() must not stay at the time we went to sleep
    clock_ = cycles();
  }
  std::lock_guard lock(rt_.idle_mu_);
  auto it = std::find(rt_.sleepers_.begin(), rt_.sleepers_.end(), this);
  if (it != rt_.sleepers_.end()) {
    rt_.sleepers_.erase(it);
    rt_.sleeping_.fetch_sub(1, std::memory_order_relaxed);
  } else {
    searching_ = true;  // wake_one took us off the list and counted us as searching
  }
}

void Processor::park_current() {
  Fiber* cur = current_;
  uint32_t expected = Fiber::kNotified;
  if (cur->park_state.compare_exchange_strong(expected, Fiber::kEmpty, std::memory_order_acquire)) {
    return;  // a permit was waiting
  }
  switch_from(cur, Pending::park, pick_fast());
}

void Processor::yield_current() {
  Fiber* cur = current_;
  Fiber* next = pick_fast();
  if (!next) {
    poll_events();
    next = pick_fast();
    if (!next) next = rt_.global_.pop();
    if (!next) return;  // nothing else is ready: keep running
  }
  switch_from(cur, Pending::requeue, next);
}

void Processor::dispatch(Fiber* child) {
  if (lifo_streak_ >= kMaxLifoStreak) {
    schedule(child, false);  // over the bound: behave like post, the queue goes first
    return;
  }
  ++lifo_streak_;
  switch_from(current_, Pending::lifo, child);
}

void Processor::exit_current() {
  Fiber* f = current_;
  uintptr_t old = f->join_word.exchange(Fiber::kDone, std::memory_order_acq_rel);
  if (old == Fiber::kExternalJoiner) {
    f->join_word.notify_all();
  } else if (old > Fiber::kExternalJoiner) {
    reinterpret_cast<Waiter*>(old)->wake();
  }
  // The main fiber's end stops the runtime before anything else runs here.
  switch_from(f, Pending::exit, f->is_main ? nullptr : pick_fast());
  __builtin_unreachable();
}

void Processor::after_switch_public() {
  after_switch();
}

// ---------------------------------------------------------------------------------------
// Runtime

Runtime::Runtime(RuntimeOptions options)
    : options_(std::move(options)), stacks_(options_.stack_size) {
  if (options_.processors == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    options_.processors = n > 0 ? static_cast<unsigned>(n) : 1;
  }
  // A help_age of 0 turns helping off: looks and naps a day apart are the scheduler without it.
  Duration age = options_.help_age > Duration::zero() ? options_.help_age : std::chrono::hours(24);
  int64_t age_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(age).count();
  help_age_cycles_ = static_cast<int64_t>(static_cast<double>(age_ns) *
                                          static_cast<double>(cycles_per_us()) / 1000);
  look_interval_cycles_ = static_cast<uint64_t>(help_age_cycles_ / kLookPerAge);
  timer_look_cycles_ =
      static_cast<uint64_t>(kTimerLookNs * static_cast<int64_t>(cycles_per_us()) / 1000);
  // The nap a processor takes while another's LIFO slot is occupied (park_idle) is no
  // help look: with helping off it stays at the default age, not a day.
  Duration nap =
      options_.help_age > Duration::zero() ? options_.help_age : RuntimeOptions{}.help_age;
  lifo_nap_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(nap).count();
  // One processor has nobody to miss a push; with more, the asymmetric barrier where the
  // kernel allows it (registration can fail: old kernels, seccomp), else push_local fences.
  park_barrier_ = options_.processors > 1 &&
                  syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  light_push_ = options_.processors == 1 || park_barrier_;
  for (unsigned i = 0; i < options_.processors; ++i) {
    std::unique_ptr<Driver> d =
        options_.make_driver ? options_.make_driver(i) : make_basic_driver();
    procs_.push_back(std::make_unique<Processor>(*this, i, std::move(d)));
  }
}

Runtime::~Runtime() = default;

void Runtime::run_main(Fiber* main) {
  // SIGPIPE would kill the process when a sendfile or splice hits a closed connection (send
  // uses MSG_NOSIGNAL, those cannot). Block it on every processor thread; threads inherit
  // the mask, and processor 0 is the caller, whose mask is restored afterwards.
  sigset_t pipe_set, saved_mask;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &saved_mask);
  push_global(main);
  std::vector<int> cpus = options_.pin ? allowed_cpus() : std::vector<int>{};
  cpu_set_t saved;
  bool restore = false;
  for (std::size_t i = 1; i < procs_.size(); ++i) {
    Processor* p = procs_[i].get();
    int cpu = cpus.empty() ? -1 : cpus[i % cpus.size()];
    p->thread_ = std::thread([p, cpu] {
      if (cpu >= 0) pin_thread(cpu);
      p->run();
    });
  }
  if (!cpus.empty()) {
    restore = sched_getaffinity(0, sizeof saved, &saved) == 0;
    pin_thread(cpus[0]);
  }
  procs_[0]->run();
  for (std::size_t i = 1; i < procs_.size(); ++i) procs_[i]->thread_.join();
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  // Drop a SIGPIPE left pending on this thread before unblocking it.
  timespec zero{0, 0};
  while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);

  // Fibers still queued never started: destroy their callables. Started ones that are
  // parked are abandoned; their stacks and blocks go with the Runtime.
  leftover_ = live_.load();
  auto discard = [](Fiber* f) {
    if (!f->stack.bottom && f->discard) f->discard(f);
  };
  while (Fiber* f = global_.pop()) discard(f);
  for (auto& p : procs_) {
    if (Fiber* f = p->lifo_.exchange(nullptr)) discard(f);
    while (Fiber* f = p->local_.pop()) discard(f);
  }
  if (leftover_ > 0) {
    std::fprintf(stderr, "weft: %zu fiber(s) were still alive when the main fiber returned\n",
                 leftover_);
  }
}

void Runtime::push_global(Fiber* f) {
  f->ready_at.store(cycles(), std::memory_order_relaxed);
  global_.push(f);
  notify_work(true);
}

void Runtime::notify_work(bool ordered) {
  // With `ordered`, seq_cst RMWs pair with park_idle's (see there). Without (pushes to a
  // processor's own queue, which schedule() follows with a full barrier) plain loads do,
  // against park_idle's locked RMW. Were a wake-up still missed, that processor would run
  // the work itself: only parallelism is lost, never progress.
  uint32_t sleeping = ordered ? sleeping_.fetch_add(0, std::memory_order_seq_cst)
                              : sleeping_.load(std::memory_order_relaxed);
  if (sleeping == 0) return;
  uint32_t searching = ordered ? searching_.fetch_add(0, std::memory_order_seq_cst)
                               : searching_.load(std::memory_order_relaxed);
  if (searching != 0) return;
  wake_one();
}

void Runtime::wake_one() {
  Processor* p = nullptr;
  {
    std::lock_guard lock(idle_mu_);
    if (sleepers_.empty() || searching_.load(std::memory_order_relaxed) != 0) return;
    // A pusher still listed as a sleeper is inside its own park (its driver reaped a
    // completion there): it is awake and runs the work itself, so it is the one "woken",
    // without a system call (it used to write its own eventfd, and its next park returned
    // at once); parked, the others stay asleep.
    Processor* self = Processor::current();
    auto it = std::find(sleepers_.begin(), sleepers_.end(), self);
    bool awake = it != sleepers_.end();
    if (!awake) it = sleepers_.end() - 1;
    p = *it;
    sleepers_.erase(it);
    sleeping_.fetch_sub(1, std::memory_order_relaxed);
    searching_.fetch_add(1, std::memory_order_seq_cst);  // on p's behalf
    if (awake) return;
  }
  p->driver_->unpark();
}

void Runtime::cover_timer(int64_t deadline_ns) {
  // Pairs with park_idle's registration (a seq_cst RMW of the same atomic): either that
  // sleeper's plan includes the new timer, or this sees it asleep and reads its plan (kNone
  // until it is made, which counts as not covering).
  if (sleeping_.fetch_add(0, std::memory_order_seq_cst) == 0) return;
  for (const auto& p : procs_) {
    if (p->plan_ns_.load(std::memory_order_seq_cst) <= deadline_ns) return;  // wakes by then
  }
  // Nobody wakes in time: the latest sleeper looks again and plans with the new timer (it
  // stays off the searchers: it has no work to look for).
  Processor* p = nullptr;
  {
    std::lock_guard lock(idle_mu_);
    if (sleepers_.empty()) return;
    p = sleepers_.back();
  }
  p->driver_->unpark();
}

void Runtime::begin_stop() {
  stopping_.store(true, std::memory_order_release);
  for (auto& p : procs_) p->driver_->unpark();
}

bool Runtime::any_lifo_occupied(const Processor* except) const {
  for (const auto& p : procs_) {
    if (p.get() != except && p->lifo_.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

bool Runtime::any_work_visible() const {
  if (!global_.empty()) return true;
  for (const auto& p : procs_) {
    if (!p->local_.empty()) return true;
  }
  return false;
}

Fiber* Runtime::allocate_fiber_block() {
  std::lock_guard lock(blocks_mu_);
  if (free_blocks_.empty()) {
    block_chunks_.push_back(std::make_unique<Fiber[]>(kBlockChunk));
    Fiber* chunk = block_chunks_.back().get();
    for (std::size_t i = 0; i < kBlockChunk; ++i) free_blocks_.push_back(&chunk[i]);
  }
  Fiber* f = free_blocks_.back();
  free_blocks_.pop_back();
  return f;
}

void Runtime::free_fiber_block(Processor* p, Fiber* f) {
  if (p && p->fiber_cache_.size() < kBlockCacheMax) {
    p->fiber_cache_.push_back(f);
    return;
  }
  std::lock_guard lock(blocks_mu_);
  free_blocks_.push_back(f);
}

// ---------------------------------------------------------------------------------------
// Fiber functions

namespace detail {

Fiber* allocate_fiber(Runtime* rt) {
  Processor* p = Processor::current();
  Fiber* f = nullptr;
  if (p && &p->runtime() == rt && !p->fiber_cache_.empty()) {
    f = p->fiber_cache_.back();
    p->fiber_cache_.pop_back();
  } else {
    f = rt->allocate_fiber_block();
  }
  f->ctx = ExecContext{};
  f->next = nullptr;
  f->stack = Stack{};
  f->rt = rt;
  f->park_state.store(Fiber::kEmpty, std::memory_order_relaxed);
  f->join_word.store(Fiber::kRunning, std::memory_order_relaxed);
  f->refs.store(2, std::memory_order_relaxed);  // the fiber's own run, and its handle
  f->is_main = false;
  f->io_stamp = UINT64_MAX;  // kNoIoStamp: no operation yet
  f->id = rt->next_id_.fetch_add(1, std::memory_order_relaxed);
  f->invoke = nullptr;
  f->discard = nullptr;
  f->heap_callable = nullptr;
  f->name[0] = '\0';
  rt->live_.fetch_add(1, std::memory_order_relaxed);
  return f;
}

void start_fiber(Runtime* rt, Fiber* f, Launch launch) {
  Processor* p = Processor::current();
  if (p && &p->runtime() == rt) {
    if (launch == Launch::dispatch && p->running()) {
      p->dispatch(f);
    } else {
      p->schedule(f, false);  // also from the scheduler context (I/O completions)
    }
    return;
  }
  rt->push_global(f);
}

Runtime* current_runtime_or_die() {
  Processor* p = Processor::current();
  if (!p || !p->running()) {
    std::fputs("weft: rt::spawn called outside a fiber; use Runtime::spawn\n", stderr);
    std::abort();
  }
  return &p->runtime();
}

void release_ref(Fiber* f) {
  if (f->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Processor* p = Processor::current();
  f->rt->free_fiber_block(p && &p->runtime() == f->rt ? p : nullptr, f);
}

void unpark(Fiber* f, bool lifo) {
  uint32_t s = f->park_state.load(std::memory_order_acquire);
  while (true) {
    if (s == Fiber::kNotified) return;
    if (s == Fiber::kEmpty) {
      if (f->park_state.compare_exchange_weak(s, Fiber::kNotified, std::memory_order_acq_rel)) {
        return;
      }
      continue;
    }
    if (f->park_state.compare_exchange_weak(s, Fiber::kEmpty, std::memory_order_acq_rel)) break;
  }
  Processor* p = Processor::current();
  if (p && &p->runtime() == f->rt) {
    p->schedule(f, lifo);
  } else {
    f->rt->push_global(f);
  }
}

}  // namespace detail

TimePoint coarse_now() {
  Processor* p = Processor::current();
  if (!p || p->round_time() == TimePoint{}) return now();
  return p->round_time();
}

Fiber* current_fiber() {
  Processor* p = Processor::current();
  return p ? p->running() : nullptr;
}

void yield() {
  Processor* p = Processor::current();
  if (p && p->running()) p->yield_current();
}

void park() {
  Processor::current()->park_current();
}

void sleep_until(TimePoint deadline) {
  if (now() >= deadline) return;
  Waiter w;
  w.wait_until(deadline);
}

void FiberHandle::join() {
  if (!fiber_) return;
  Fiber* f = fiber_;
  fiber_ = nullptr;
  if (in_fiber()) {
    Waiter w;
    uintptr_t expected = Fiber::kRunning;
    if (f->join_word.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(&w),
                                             std::memory_order_acq_rel)) {
      w.wait();
    }
  } else {
    uintptr_t expected = Fiber::kRunning;
    if (f->join_word.compare_exchange_strong(expected, Fiber::kExternalJoiner,
                                             std::memory_order_acq_rel)) {
      while (f->join_word.load(std::memory_order_acquire) != Fiber::kDone) {
        f->join_word.wait(Fiber::kExternalJoiner, std::memory_order_acquire);
      }
    }
  }
  detail::release_ref(f);
}

void FiberHandle::detach() {
  if (!fiber_) return;
  detail::release_ref(std::exchange(fiber_, nullptr));
}

}  // namespace weft::rt
