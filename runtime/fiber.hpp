// Fibers: user-level threads run by the runtime's processors.
//
// A fiber is a control block (this Fiber struct, pooled) plus a stack (from StackPool),
// which is attached only when the fiber first runs, so fibers spawned but not yet started
// cost a control block and no stack.
//
// States: spawned (queued, no stack) -> running <-> ready (queued) / parked -> finished.
// A fiber that parks is switched away from first and only then marked parked, by the next
// context to run on that processor, so no other processor can resume it while its stack is
// still in use. park()/unpark() follow a permit model (like Rust's thread::park): an unpark
// that comes before the park makes the park return at once, and park may return without an
// unpark of its own; callers loop on their condition.
//
// Who touches what: `ctx`, `stack` and the callable belong to whichever processor runs the
// fiber; `park_state`, `join_word`, `refs` and `ready_at` are atomics any thread may use;
// `io_stamp` is the fiber's own (set by the I/O driver on its behalf, read by the fiber);
// `next` belongs to whichever queue or wait list holds the fiber (at most one at a time).
//
// Shutdown: a Fiber's control block is freed when both its own run and its handle are done
// with it (refs). Handles must not outlive the Runtime that made them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include "runtime/clock.hpp"
#include "runtime/context.hpp"
#include "runtime/stack_pool.hpp"

namespace weft::rt {

class Runtime;
class Processor;

/// How spawn schedules the new fiber: post queues it and the caller continues; dispatch runs
/// it at once and queues the caller first in line (depth-first, like Boost.Fiber's
/// launch::dispatch; spawn may then switch fibers).
enum class Launch { post, dispatch };

struct SpawnOptions {
  const char* name = nullptr;  // copied, truncated to 31 bytes; shown in exception reports
  Launch launch = Launch::post;
};

// Cache-line aligned (and 256 bytes): fibers of one chunk run on different processors, and
// their hot words (park_state, ready_at, next, ctx) must not share a line.
struct alignas(64) Fiber {
  static constexpr std::size_t kInlineCallable = 64;
  static constexpr uint32_t kEmpty = 0, kNotified = 1, kParked = 2;
  // join_word: running, done, joined by a thread outside the runtime, else a Waiter*.
  static constexpr uintptr_t kRunning = 0, kDone = 1, kExternalJoiner = 2;

  ExecContext ctx;
  Fiber* next = nullptr;
  Stack stack;
  Runtime* rt = nullptr;
  std::atomic<uint32_t> park_state{kEmpty};
  std::atomic<uintptr_t> join_word{kRunning};
  std::atomic<uint32_t> refs{0};
  // cycles() when the fiber last became ready; written by whoever queues it, read racily by
  // processors judging how long another's queue head has waited (a stale value only delays
  // or hastens one look).
  std::atomic<uint64_t> ready_at{0};
  bool is_main = false;
  uint64_t id = 0;
  // The epoch as of the fiber's latest I/O result (io_epoch.hpp); the fiber's own.
  uint64_t io_stamp = UINT64_MAX;
  void (*invoke)(Fiber*) = nullptr;   // runs, then destroys, the callable
  void (*discard)(Fiber*) = nullptr;  // destroys a callable that never ran
  void* heap_callable = nullptr;      // callables larger than kInlineCallable live here
  alignas(std::max_align_t) unsigned char storage[kInlineCallable];
  char name[32] = {};

  /// Returns the fiber's name ("" when it has none).
  const char* fiber_name() const { return name; }
};

/// Called with the fiber's name when an exception escapes a fiber; the default prints it to
/// stderr. Set once, before starting runtimes.
using ExceptionHook = void (*)(const char* fiber_name, std::exception_ptr error);

/// Replaces the process-wide hook for exceptions that escape fibers; returns the old one.
ExceptionHook set_exception_hook(ExceptionHook hook);

/// A joinable reference to a fiber. Destroying a joinable handle detaches the fiber.
class FiberHandle {
 public:
  FiberHandle() = default;
  explicit FiberHandle(Fiber* f) : fiber_(f) {}
  FiberHandle(FiberHandle&& o) noexcept : fiber_(std::exchange(o.fiber_, nullptr)) {}
  FiberHandle& operator=(FiberHandle&& o) noexcept {
    if (this != &o) {
      detach();
      fiber_ = std::exchange(o.fiber_, nullptr);
    }
    return *this;
  }
  ~FiberHandle() { detach(); }

  /// Returns whether the handle still refers to a fiber (not joined or detached).
  bool joinable() const { return fiber_ != nullptr; }

  /// Parks the calling fiber (or blocks the calling thread, outside the runtime) until the
  /// fiber has finished; the handle is then empty.
  void join();

  /// Lets the fiber run on without a handle; the handle is then empty.
  void detach();

  /// Returns the fiber's id, or 0 for an empty handle.
  uint64_t id() const { return fiber_ ? fiber_->id : 0; }

 private:
  Fiber* fiber_ = nullptr;
};

namespace detail {

/// Returns a fresh control block from the current processor's pool (or rt's shared pool).
Fiber* allocate_fiber(Runtime* rt);

/// Queues a prepared fiber (from a processor or from any thread) per its launch policy.
void start_fiber(Runtime* rt, Fiber* f, Launch launch);

/// Returns the runtime of the calling fiber; aborts when called outside any fiber.
Runtime* current_runtime_or_die();

/// Drops one reference to f's control block, freeing it at zero.
void release_ref(Fiber* f);

/// unpark() with a placement hint: `lifo` runs f next on this processor (a hand-off);
/// otherwise f joins the queue tail (a batch of I/O completions keeps its order).
void unpark(Fiber* f, bool lifo);

template <typename F>
Fiber* prepare(Runtime* rt, F&& fn, const SpawnOptions& opts) {
  using Fn = std::decay_t<F>;
  Fiber* f = allocate_fiber(rt);
  if constexpr (sizeof(Fn) <= Fiber::kInlineCallable && alignof(Fn) <= alignof(std::max_align_t)) {
    ::new (static_cast<void*>(f->storage)) Fn(std::forward<F>(fn));
    f->invoke = [](Fiber* self) {
      Fn* c = std::launder(reinterpret_cast<Fn*>(self->storage));
      struct Destroy {
        Fn* c;
        ~Destroy() { c->~Fn(); }
      } d{c};
      (*c)();
    };
    f->discard = [](Fiber* self) { std::launder(reinterpret_cast<Fn*>(self->storage))->~Fn(); };
  } else {
    f->heap_callable = new Fn(std::forward<F>(fn));
    f->invoke = [](Fiber* self) {
      Fn* c = static_cast<Fn*>(std::exchange(self->heap_callable, nullptr));
      struct Destroy {
        Fn* c;
        ~Destroy() { delete c; }
      } d{c};
      (*c)();
    };
    f->discard = [](Fiber* self) {
      delete static_cast<Fn*>(std::exchange(self->heap_callable, nullptr));
    };
  }
  if (opts.name) {
    std::size_t i = 0;
    for (; opts.name[i] && i + 1 < sizeof(f->name); ++i) f->name[i] = opts.name[i];
    f->name[i] = '\0';
  }
  return f;
}

}  // namespace detail

/// Starts `fn` on a new fiber of the calling fiber's runtime; must be called from a fiber.
template <typename F>
FiberHandle spawn(F&& fn, SpawnOptions opts = {}) {
  Runtime* rt = detail::current_runtime_or_die();
  Fiber* f = detail::prepare(rt, std::forward<F>(fn), opts);
  detail::start_fiber(rt, f, opts.launch);
  return FiberHandle{f};
}

/// Returns the calling fiber, or nullptr when not called from a fiber.
Fiber* current_fiber();

/// Returns whether the caller runs on a fiber.
inline bool in_fiber() {
  return current_fiber() != nullptr;
}

/// Lets every other ready fiber of this processor run before the caller continues.
void yield();

/// Parks the calling fiber until unpark() (permit semantics: see the top of this header).
void park();

/// Makes a parked fiber ready, or leaves it a permit so its next park() returns at once.
inline void unpark(Fiber* f) {
  detail::unpark(f, true);
}

/// Parks the calling fiber until `deadline`; never returns earlier.
void sleep_until(TimePoint deadline);

/// Parks the calling fiber for at least `d` (Duration::max(): for good).
inline void sleep_for(Duration d) {
  sleep_until(deadline_after(d));
}

}  // namespace weft::rt
