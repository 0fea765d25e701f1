// The backend-independent half of the I/O drivers: cancellation hand-off, and choosing
// io_uring or epoll at start.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <liburing.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "runtime/file_workers.hpp"
#include "runtime/io_driver_internal.hpp"
#include "runtime/scheduler.hpp"

namespace weft::rt {

// --- CancelToken / ReadyWait / IoWait --------------------------------------------------

static_assert(sizeof(ReadyState) <= sizeof(ReadyWait) && alignof(ReadyState) <= alignof(ReadyWait),
              "ReadyWait's storage must hold a ReadyState");
static_assert(std::is_trivially_destructible_v<ReadyState>,
              "ReadyWait has no destructor: its state must need none");

ReadyWait::ReadyWait() {
  new (state_) ReadyState{};
}

void CancelToken::cancel() {
  // The drivers are woken after the lock is released: an unpark is a system call (and may
  // run the caller's own driver, whose completions end waits of this token, which take the
  // lock). Drivers live as long as their runtime, so they outlast the waits seen here.
  std::vector<IoDriver*> drivers;
  {
    std::lock_guard g(lock_);
    cancelled_ = true;
    // Under our lock no waiting fiber can unregister (end() takes it), so every IoWait on
    // the list is alive while its driver queues the request.
    for (IoWait* w = inflight_; w; w = w->token_next) {
      w->driver_->queue_cancel(w);
      if (std::find(drivers.begin(), drivers.end(), w->driver_) == drivers.end()) {
        drivers.push_back(w->driver_);
      }
    }
  }
  for (IoDriver* d : drivers) d->unpark();
}

bool CancelToken::cancelled() const {
  std::lock_guard g(lock_);
  return cancelled_;
}

bool IoWait::begin() {
  if (!token_) return true;
  std::lock_guard g(token_->lock_);
  if (token_->cancelled_) return false;
  token_prev = nullptr;
  token_next = token_->inflight_;
  if (token_next) token_next->token_prev = this;
  token_->inflight_ = this;
  return true;
}

void IoWait::end() {
  if (!token_) return;
  std::lock_guard g(token_->lock_);
  if (token_prev) {
    token_prev->token_next = token_next;
  } else {
    token_->inflight_ = token_next;
  }
  if (token_next) token_next->token_prev = token_prev;
  token_next = token_prev = nullptr;
}

void IoDriver::close_detached(int fd) {
  ::close(fd);
}

void IoDriver::request_cancel(IoWait* w) {
  queue_cancel(w);
  unpark();
}

void IoDriver::queue_cancel(IoWait* w) {
  std::lock_guard g(remote_lock_);
  if (w->completed || w->cancel_queued) return;
  w->cancel_queued = true;
  w->next_cancel = cancels_;
  cancels_ = w;
}

void IoDriver::mark_completed(IoWait* w) {
  // Without a token only the owner thread (a deadline timer) can queue a cancel of w, and
  // this runs on the owner too: no lock needed unless a cancel is queued.
  if (!w->has_token() && !w->cancel_queued) {
    w->completed = true;
    return;
  }
  std::lock_guard g(remote_lock_);
  w->completed = true;
  if (!w->cancel_queued) return;
  for (IoWait** p = &cancels_; *p; p = &(*p)->next_cancel) {
    if (*p == w) {
      *p = w->next_cancel;
      break;
    }
  }
  w->cancel_queued = false;
}

void IoDriver::finish_ready(ReadyState& r) {
  if (r.has_timer) TimerHeap::cancel(&r.timer);  // owner thread: it cannot be firing now
  r.io.end();
  int64_t res = r.io.result;
  if (res == -ECANCELED && r.fired && !(r.io.token() && r.io.token()->cancelled())) {
    res = -ETIMEDOUT;
  }
  ReadyWait::Callback fn = r.fn;
  void* arg = r.arg;
  Processor* p = Processor::current();
  Runtime* rt = &p->runtime();
  Fiber* f = detail::prepare(
      rt, [fn, arg, res] { fn(arg, static_cast<int>(res)); }, SpawnOptions{"ready"});
  detail::start_fiber(rt, f, Launch::post);
  detail::release_ref(f);  // no handle: detached
}

IoWait* IoDriver::take_cancels() {
  std::lock_guard g(remote_lock_);
  IoWait* list = cancels_;
  cancels_ = nullptr;
  for (IoWait* w = list; w; w = w->next_cancel) w->cancel_queued = false;
  return list;
}

// --- backend choice -------------------------------------------------------------------

namespace {

std::string io_uring_disabled_sysctl() {
  std::ifstream f("/proc/sys/kernel/io_uring_disabled");
  std::string v;
  if (f >> v) return v;
  return {};
}

}  // namespace

namespace {

// Opens and closes a small ring; returns 0 or the -errno io_uring_setup failed with.
int probe_io_uring() {
  io_uring probe;
  int rc = io_uring_queue_init(8, &probe, 0);
  if (rc == 0) io_uring_queue_exit(&probe);
  return rc;
}

}  // namespace

bool io_uring_usable() {
  return probe_io_uring() == 0;
}

DriverFactory make_io_driver_factory(const IoOptions& options) {
  bool use_uring = options.backend != IoBackendKind::epoll;
  if (use_uring) {
    int rc = probe_io_uring();
    if (rc != 0) {
      std::string sysctl = io_uring_disabled_sysctl();
      std::string cause;
      if (rc == -ENOSYS) {
        cause =
            "io_uring_setup returned ENOSYS: the system call is blocked (a container's "
            "default seccomp profile does this) or the kernel lacks io_uring";
      } else if (rc == -EPERM && !sysctl.empty() && sysctl != "0") {
        cause = "io_uring_setup returned EPERM: sysctl kernel.io_uring_disabled=" + sysctl;
      } else {
        cause = std::string{"io_uring_setup failed: "} + std::strerror(-rc);
      }
      std::string fix =
          "to use io_uring, run the container with a seccomp profile that allows "
          "io_uring_setup, io_uring_enter and io_uring_register (conf/seccomp-io_uring.json), "
          "or set sysctl kernel.io_uring_disabled=0";
      if (options.backend == IoBackendKind::io_uring) {
        throw std::runtime_error("io_uring is required by config but unavailable: " + cause + "; " +
                                 fix);
      }
      spdlog::warn("io_uring unavailable ({}); using the epoll backend; {}", cause, fix);
      use_uring = false;
    }
  } else {
    spdlog::info("io backend: epoll (forced by configuration)");
  }
  if (use_uring) {
    return [options](unsigned) -> std::unique_ptr<Driver> { return make_io_uring_driver(options); };
  }
  auto workers = std::make_shared<FileWorkers>();  // one pool for every processor
  return [options, workers](unsigned) -> std::unique_ptr<Driver> {
    return make_epoll_driver(options, workers);
  };
}

}  // namespace weft::rt
