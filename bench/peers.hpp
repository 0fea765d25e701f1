// The two runtimes under comparison, behind one small interface, so that every benchmark body
// in runtime_cases.hpp is one template that does the same work on both.
//
// A peer P provides: P::run(cfg, main) runs `main` on a fiber of a fresh runtime with
// cfg.procs kernel threads and returns when it returned; P::spawn(fn, launch) starts a fiber
// and returns a Handle (join() or detach(); weft detaches a dropped handle, Boost would
// terminate, so always do one); P::yield(); P::sleep_for(d); P::Semaphore (acquire/release);
// P::Mutex; P::Channel (a 16-slot channel of uint64_t: send/recv).
//
// Stacks are 64 KiB on both. Boost uses fixedsize_stack (its default allocator): malloc'd,
// no guard page, and recycled by malloc's free lists, which is the closest thing Boost has to
// weft's pooled stacks. protected_fixedsize_stack would mmap, mprotect and munmap every
// stack, and at about 15 us per first-touched page on these VMs would measure the kernel
// rather than Boost.Fiber's scheduler.
//
// Multi-thread Boost runs use algo::work_stealing(procs, suspend): the closest peer to weft's
// per-processor queues with stealing. suspend=false (Boost's default, and its fastest) makes
// idle threads spin; suspend=true makes them sleep on a condition variable, but a sleeping
// thread is woken only for fibers scheduled onto it from another thread, never to steal. One
// thread runs Boost's default round_robin. Boost has no semaphore; BoostSemaphore below is
// built the way Boost builds its own mutex (spinlock, intrusive wait queue, suspend/schedule),
// which is also how rt::Semaphore is built.
#pragma once

#include <boost/fiber/algo/work_stealing.hpp>
#include <boost/fiber/all.hpp>
#include <boost/fiber/fixedsize_stack.hpp>
// Boost.Fiber defines a function-like macro cpu_relax(), which would break weft's
// rt::cpu_relax(); every Boost header this program needs is included above this line.
#undef cpu_relax

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/channel.hpp"
#include "runtime/fiber.hpp"
#include "runtime/mutex.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"

namespace weft::bench {

inline constexpr std::size_t kStackSize = 64 * 1024;  // weft's default stack size

enum class Launch { post, dispatch };

struct RunConfig {
  unsigned procs = 1;   // processors (weft) or scheduler threads (Boost)
  unsigned spin = 100;  // weft: RuntimeOptions::spin
  // weft: RuntimeOptions::help_age; 0 turns helping off (the scheduler as it was before it)
  std::chrono::microseconds help_age =
      std::chrono::duration_cast<std::chrono::microseconds>(rt::RuntimeOptions{}.help_age);
  bool boost_suspend = false;  // Boost work_stealing: idle threads sleep instead of spinning
};

// ---------------------------------------------------------------------------------------
// weft

struct WeftPeer {
  static constexpr const char* kName = "weft";

  using Semaphore = rt::Semaphore;
  using Mutex = rt::Mutex;

  class Channel {
   public:
    Channel() : c_(16) {}
    void send(uint64_t v) { c_.send(v); }
    uint64_t recv() { return *c_.recv(); }

   private:
    rt::Channel<uint64_t> c_;
  };

  class Handle {
   public:
    explicit Handle(rt::FiberHandle h) : h_(std::move(h)) {}
    void join() { h_.join(); }
    void detach() { h_.detach(); }

   private:
    rt::FiberHandle h_;
  };

  template <typename F>
  static void run(const RunConfig& cfg, F&& main) {
    rt::RuntimeOptions o;
    o.processors = cfg.procs;
    o.spin = cfg.spin;
    // A day is "never": no fiber waits that long in a benchmark.
    o.help_age = cfg.help_age;
    o.stack_size = kStackSize;
    rt::Runtime runtime(o);
    runtime.run(std::forward<F>(main));
  }

  template <typename F>
  static Handle spawn(F&& fn, Launch launch = Launch::post) {
    rt::SpawnOptions so;
    so.launch = launch == Launch::post ? rt::Launch::post : rt::Launch::dispatch;
    return Handle(rt::spawn(std::forward<F>(fn), so));
  }

  static void yield() { rt::yield(); }

  template <typename Rep, typename Period>
  static void sleep_for(std::chrono::duration<Rep, Period> d) {
    rt::sleep_for(std::chrono::duration_cast<rt::Duration>(d));
  }
};

// ---------------------------------------------------------------------------------------
// Boost.Fiber

/// A counting semaphore over Boost.Fiber's own suspend/schedule, shaped like boost::fibers::mutex.
class BoostSemaphore {
 public:
  explicit BoostSemaphore(int64_t initial = 0) : count_(initial) {}
  BoostSemaphore(const BoostSemaphore&) = delete;
  BoostSemaphore& operator=(const BoostSemaphore&) = delete;

  /// Takes a permit, suspending the fiber until one is handed to it.
  void acquire() {
    boost::fibers::context* self = boost::fibers::context::active();
    boost::fibers::detail::spinlock_lock lk{lock_};
    if (count_ > 0) {
      --count_;
      return;
    }
    self->wait_link(waiters_);
    self->suspend(lk);  // unlocks once switched away; release() hands the permit over
  }

  /// Adds a permit, handing it straight to the oldest waiter when there is one.
  void release(int64_t n = 1) {
    boost::fibers::context* self = boost::fibers::context::active();
    boost::fibers::detail::spinlock_lock lk{lock_};
    for (; n > 0; --n) {
      if (waiters_.empty()) {
        count_ += n;
        return;
      }
      boost::fibers::context* waiter = &waiters_.front();
      waiters_.pop_front();
      self->schedule(waiter);
    }
  }

 private:
  boost::fibers::detail::spinlock lock_;
  int64_t count_;
  boost::fibers::context::wait_queue_t waiters_;
};

struct BoostPeer {
  static constexpr const char* kName = "Boost";

  using Semaphore = BoostSemaphore;
  using Mutex = boost::fibers::mutex;

  class Channel {
   public:
    void send(uint64_t v) { c_.push(v); }
    uint64_t recv() { return c_.value_pop(); }

   private:
    boost::fibers::buffered_channel<uint64_t> c_{16};  // a power of two, as Boost requires
  };

  class Handle {
   public:
    explicit Handle(boost::fibers::fiber f) : f_(std::move(f)) {}
    void join() { f_.join(); }
    void detach() { f_.detach(); }

   private:
    boost::fibers::fiber f_;
  };

  template <typename F>
  static void run(const RunConfig& cfg, F&& main) {
    if (cfg.procs <= 1) {  // round_robin, made on first use; main() runs on the main fiber
      main();
      return;
    }
    std::mutex mu;
    boost::fibers::condition_variable_any done_cv;
    bool done = false;
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < cfg.procs; ++i) {
      threads.emplace_back([&] {
        boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(
            cfg.procs, cfg.boost_suspend);
        std::unique_lock lk(mu);
        done_cv.wait(lk, [&] { return done; });  // parks this thread's main fiber
      });
    }
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(cfg.procs,
                                                                                cfg.boost_suspend);
    main();
    {
      std::lock_guard lk(mu);
      done = true;
    }
    done_cv.notify_all();
    for (auto& t : threads) t.join();
  }

  template <typename F>
  static Handle spawn(F&& fn, Launch launch = Launch::post) {
    auto policy =
        launch == Launch::post ? boost::fibers::launch::post : boost::fibers::launch::dispatch;
    return Handle(boost::fibers::fiber(policy, std::allocator_arg,
                                       boost::fibers::fixedsize_stack(kStackSize),
                                       std::forward<F>(fn)));
  }

  static void yield() { boost::this_fiber::yield(); }

  template <typename Rep, typename Period>
  static void sleep_for(std::chrono::duration<Rep, Period> d) {
    boost::this_fiber::sleep_for(d);
  }
};

}  // namespace weft::bench
