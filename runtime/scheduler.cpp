// The scheduler's lifecycle (see scheduler.hpp): making processors and the runtime, starting
// the processor threads and stopping them, and fiber control blocks.
#include "runtime/scheduler.hpp"

#include <cstdio>

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/io_driver_internal.hpp"
#include "runtime/scheduler_internal.hpp"

namespace weft::rt {
namespace {

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
  look_interval_cycles_ = static_cast<uint64_t>(help_age_cycles_ / detail::kLookPerAge);
  timer_look_cycles_ =
      static_cast<uint64_t>(detail::kTimerLookNs * static_cast<int64_t>(cycles_per_us()) / 1000);
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

void Runtime::begin_stop() {
  stopping_.store(true, std::memory_order_release);
  for (auto& p : procs_) p->driver_->unpark();
}

Fiber* Runtime::allocate_fiber_block() {
  std::lock_guard lock(blocks_mu_);
  if (free_blocks_.empty()) {
    block_chunks_.push_back(std::make_unique<Fiber[]>(detail::kBlockChunk));
    Fiber* chunk = block_chunks_.back().get();
    for (std::size_t i = 0; i < detail::kBlockChunk; ++i) free_blocks_.push_back(&chunk[i]);
  }
  Fiber* f = free_blocks_.back();
  free_blocks_.pop_back();
  return f;
}

}  // namespace weft::rt
