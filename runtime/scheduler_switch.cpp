// Running fibers and making them ready (see scheduler.hpp): a processor's loop, the switch
// and what the fiber that left asks for, the LIFO slot and the queue tail, waking a sleeper
// for new work, and the fiber functions built on them. One file: the yield, park and wake
// paths inline across these (and know what Processor::current() clobbers).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "runtime/scheduler.hpp"
#include "runtime/scheduler_internal.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {
namespace {

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

}  // namespace

ExceptionHook set_exception_hook(ExceptionHook hook) {
  return g_exception_hook.exchange(hook ? hook : &default_exception_hook);
}

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

void Processor::after_switch_public() {
  after_switch();
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
  if (lifo_streak_ >= detail::kMaxLifoStreak) {
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

void Runtime::free_fiber_block(Processor* p, Fiber* f) {
  if (p && p->fiber_cache_.size() < detail::kBlockCacheMax) {
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
