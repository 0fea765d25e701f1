// Picking the next fiber (see scheduler.hpp): the fast pick, stealing (an idle processor
// takes half of another's queue) and helping (a busy one takes another's oldest fibers).
#include <algorithm>

#include "runtime/scheduler.hpp"
#include "runtime/scheduler_internal.hpp"

namespace weft::rt {
namespace {

// Picked like Go and Tokio (61: prime, so it does not beat with other periodic patterns).
constexpr uint64_t kGlobalInterval = 61;
// How often a busy processor polls its driver and timers between queue drains; picked, to
// be measured against I/O latency under load.
constexpr uint64_t kPollInterval = 61;
// How often (in picks) a busy processor refreshes its cycle count (clock_), and so how
// stale a ready stamp may be. A read costs ~20 ns here: every 32nd pick keeps it under 1 ns
// a pick. Measured with runtime_bench's yield rows (docs/benchmarks.md, "Helping").
constexpr uint64_t kClockInterval = 32;
// Fibers one help look may take from another processor's queue (the first runs at once,
// the others queue here): a processor stuck in a long fiber has its whole queue waiting.
constexpr unsigned kHelpBatch = 8;
// A processor that makes progress has its queue helped only once the head has waited this
// many help_ages: sooner, every hiccup (a preempted vCPU, a burst of wake-ups) would move
// fibers and their caches back and forth. churn: 6,921 fibers moved per run with 1, 0 with 10.
constexpr int64_t kBusyVictimAges = 10;

}  // namespace

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
      if (lifo_streak_ < detail::kMaxLifoStreak) {
        ++lifo_streak_;
        return f;
      }
      local_.push(f, rt_.global_);
    }
  }
  lifo_streak_ = 0;
  return local_.pop();
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

}  // namespace weft::rt
