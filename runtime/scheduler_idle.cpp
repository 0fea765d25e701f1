// The idle protocol and the looks at timers (see scheduler.hpp): the slow path a processor
// takes when it has nothing to run, searching, parking and waking for timers.
#include <algorithm>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/scheduler.hpp"
#include "runtime/scheduler_internal.hpp"

namespace weft::rt {
namespace {

// Fibers taken from the global queue at once when a processor runs dry.
constexpr unsigned kGlobalBatch = 32;

}  // namespace

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

}  // namespace weft::rt
