// The epoll backend: readiness-based I/O for where io_uring is blocked (seccomp, sysctl).
//
// Socket operations are tried at once with non-blocking system calls; on EAGAIN the fiber
// waits for readiness: its fd is added to the processor's epoll with EPOLLONESHOT, naming a
// slot of the processor's wait table (index and generation, so an event that arrives after
// the wait ended is recognised as stale). Events, timeouts (the processor's timer heap) and
// cancel requests all complete a wait on the owner thread before it wakes the fiber; so
// nothing refers to the wait once the fiber runs again. A wait ended by its event leaves the
// registration in epoll, disarmed by EPOLLONESHOT, and the next wait on that descriptor
// re-arms it with one EPOLL_CTL_MOD: one system call per wait instead of an ADD and a DEL.
// A wait ended by its deadline or a cancel deletes the registration only if it is still its
// own (the table records which wait armed it): its descriptor may have been closed and the
// number registered again by a newer wait.
// A receive that waited is made by the driver as it reaps the event, before the fiber runs,
// so that the receives of one batch carry one I/O stamp (io_epoch.hpp).
// A file read at an offset tries preadv2(RWF_NOWAIT) first, which copies what the page
// cache holds; one that would wait for the disk goes to the shared FileWorkers pool while
// the fiber parks. File writes, open, statx and close are plain system calls: they block
// the processor for as long as the kernel takes. splice is done with SPLICE_F_NONBLOCK;
// sendfile like splice for sockets.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/file_workers.hpp"
#include "runtime/io.hpp"
#include "runtime/io_driver.hpp"
#include "runtime/io_epoch.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/timer.hpp"

namespace weft::rt {
namespace {

constexpr uint64_t kWakeTag = ~uint64_t{0};

class EpollDriver final : public IoDriver {
 public:
  EpollDriver(const IoOptions& o, std::shared_ptr<FileWorkers> workers)
      : workers_(std::move(workers)) {
    if (!workers_) workers_ = std::make_shared<FileWorkers>();
    workers_->add_capacity(o.iowq_bounded);
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epfd_ < 0 || wake_fd_ < 0) {
      std::perror("weft: epoll/eventfd");
      std::abort();
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  }

  ~EpollDriver() override {
    ::close(epfd_);
    ::close(wake_fd_);
  }

  const char* name() const override { return "epoll"; }

  int poll() override {
    flush_cancels();
    return wait_events(0);
  }

  bool poll_makes_a_system_call() const override { return true; }

  void park(int64_t timeout_ns) override {
    // A completed cancel or timeout made a fiber ready: look for events, do not sleep.
    wait_events(flush_cancels() > 0 ? 0 : timeout_ns);
  }

  void unpark() override {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
  }

  int64_t execute(IoRequest& r) override {
    bump_owned(ops_);
    if (r.op == IoOpcode::recv) return do_recv(r);  // stamps its result itself
    const int64_t res = run(r);
    if (receives(r)) set_io_stamp(io_epoch());  // after the system call that produced it
    return res;
  }

 private:
  int64_t run(IoRequest& r) {
    switch (r.op) {
      case IoOpcode::accept:
        return do_accept(r);
      case IoOpcode::connect:
        return do_connect(r);
      case IoOpcode::recv:
        return do_recv(r);
      case IoOpcode::send:
        return retry(r, POLLOUT, [&] {
          const SocketIoArgs& a = r.args.socket;
          return ::send(r.fd, a.buf, a.len, a.msg_flags | MSG_DONTWAIT);
        });
      case IoOpcode::sendmsg:
        return retry(r, POLLOUT, [&] {
          return ::sendmsg(r.fd, r.args.message.msg, r.args.message.msg_flags | MSG_DONTWAIT);
        });
      case IoOpcode::read:
        if (r.args.file.offset >= 0) {
          if (r.token && r.token->cancelled()) return -ECANCELED;
          return read_file(r.fd, r.args.file, r.offload);
        }
        return retry(r, POLLIN, [&] { return ::read(r.fd, r.args.file.buf, r.args.file.len); });
      case IoOpcode::write:
        return retry(r, POLLOUT, [&] {
          const FileIoArgs& a = r.args.file;
          return a.offset >= 0 ? ::pwrite(r.fd, a.buf, a.len, a.offset)
                               : ::write(r.fd, a.buf, a.len);
        });
      case IoOpcode::splice:
        return do_splice(r);
      case IoOpcode::sendfile:
        return retry(r, POLLOUT, [&] {
          const SendfileArgs& a = r.args.sendfile;
          off_t off = a.offset;
          return ::sendfile(a.fd_out, r.fd, a.offset >= 0 ? &off : nullptr, a.len);
        });
      case IoOpcode::openat2:
        return io::openat2_now(r.fd, r.args.open.path, r.args.open.how.flags, r.args.open.how.mode,
                               r.args.open.how.resolve);
      case IoOpcode::statx:
        return ::statx(r.fd, r.args.stat.path, r.args.stat.flags, r.args.stat.mask,
                       r.args.stat.out) < 0
                   ? -errno
                   : 0;
      case IoOpcode::close:
        return ::close(r.fd) < 0 ? -errno : 0;
      case IoOpcode::poll:
        return wait_ready(r.fd, r.args.poll.events, r.deadline, r.token);
    }
    return -ENOSYS;
  }

  // A receive. One that has to wait for readiness is made by the driver as it reaps the
  // event (complete()), not by the fiber once it runs: then every receive of a reaped batch
  // is stamped before any fiber of the batch looks at what it read, and one look at a
  // change queue serves them all (io_epoch.hpp). Made here when the bytes are there at once.
  int64_t do_recv(IoRequest& r) {
    const SocketIoArgs& a = r.args.socket;
    bool wait = r.poll_first;
    while (true) {
      if (r.token && r.token->cancelled()) return -ECANCELED;
      if (wait) {
        ReadyWait w;
        w.recv = &r;
        const int64_t events = current()->wait_ready(w, r.fd, POLLIN, r.deadline, r.token);
        if (events < 0) return events;
        if (w.received != -EAGAIN) {
          set_io_stamp(w.io.stamp);
          return w.received;
        }
      }
      const ssize_t n = ::recv(r.fd, a.buf, a.len, a.msg_flags | MSG_DONTWAIT);
      const int err = n < 0 ? errno : 0;
      if (err == EINTR) continue;
      if (err != EAGAIN) {
        set_io_stamp(io_epoch());
        return err ? -err : n;
      }
      wait = true;
    }
  }

  // Makes the receive that reaped wait `w` is for (see do_recv); leaves -EAGAIN in
  // w.received when there was nothing after all, for the fiber to wait again.
  static void receive_now(ReadyWait& w) {
    const IoRequest& r = *w.recv;
    const SocketIoArgs& a = r.args.socket;
    ssize_t n;
    do {
      n = ::recv(r.fd, a.buf, a.len, a.msg_flags | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    w.received = n < 0 ? -errno : n;
    w.io.stamp = io_epoch();
  }

  // The epoll driver of the processor the calling fiber runs on now: a wait registers in
  // that processor's wait table, which only its owner thread touches.
  static EpollDriver* current() {
    return static_cast<EpollDriver*>(Processor::current()->io_driver());
  }

  struct FdWait {
    ReadyWait* wait = nullptr;
    uint32_t gen = 0;
  };

  // What this processor's epoll holds for a descriptor. `idle`: registered and disarmed (its
  // last wait ended by its event), so the next wait re-arms it with EPOLL_CTL_MOD; `armed`: a
  // wait holds it. Closing a file removes its registrations, so a number may say `idle` for
  // a closed descriptor: the MOD then fails with ENOENT and the wait adds it. accept and
  // connect reset the number they hand out, which keeps that detour off the usual path.
  // An armed registration also names the wait that armed it (its wait-table slot, held until
  // that wait completes): a wait whose descriptor was closed meanwhile, and whose number a
  // new wait has registered again, must not touch the new registration when it completes.
  enum class Reg : uint8_t { none, idle, armed };
  struct RegEntry {
    Reg state = Reg::none;
    uint32_t slot = 0;  // while armed: the wait's slot
  };

  RegEntry& reg(int fd) {
    if (static_cast<std::size_t>(fd) >= reg_.size()) reg_.resize(static_cast<std::size_t>(fd) + 64);
    return reg_[static_cast<std::size_t>(fd)];
  }

  void forget(int fd) { reg(fd).state = Reg::none; }

  // Returns whether w's own registration is the one armed under its descriptor's number.
  bool owns_registration(const ReadyWait& w) {
    const RegEntry& e = reg(w.fd);
    return e.state == Reg::armed && e.slot == w.slot;
  }

  // Registers (or re-arms) fd for one event of the wait in `slot`; returns epoll_ctl's
  // result (errno set).
  int register_fd(int fd, epoll_event& ev, uint32_t slot) {
    Reg state = reg(fd).state;
    int rc = -1;
    if (state == Reg::armed) {
      errno = EEXIST;  // another wait of this processor holds fd
    } else if (state == Reg::idle) {
      rc = epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev);
      if (rc < 0 && errno == ENOENT) rc = epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    } else {
      rc = epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    }
    if (rc == 0) reg(fd) = {Reg::armed, slot};
    return rc;
  }

  // Runs attempt() until it does not say EAGAIN, waiting for `events` on the request's fd.
  template <typename Attempt>
  int64_t retry(IoRequest& r, short events, Attempt attempt) {
    int fd = readiness_fd(r);
    if (r.poll_first) {
      int64_t w = current()->wait_ready(fd, events, r.deadline, r.token);
      if (w < 0) return w;
    }
    while (true) {
      if (r.token && r.token->cancelled()) return -ECANCELED;
      auto n = attempt();
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -errno;
      int64_t w = current()->wait_ready(fd, events, r.deadline, r.token);
      if (w < 0) return w;
    }
  }

  // A read at an offset is a file's (pread fails with ESPIPE on anything else). Pages in
  // the cache are copied here; the rest waits for the disk on a worker thread.
  int64_t read_file(int fd, const FileIoArgs& a, bool offload) {
    // Known to be cold: even a RWF_NOWAIT try would allocate its pages (and start their
    // readahead) here.
    if (offload) return workers_->pread(fd, a.buf, a.len, a.offset);
    iovec iov{a.buf, a.len};
    while (true) {
      ssize_t n = ::preadv2(fd, &iov, 1, a.offset, RWF_NOWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      // EOPNOTSUPP: the file system cannot say; the worker's read is correct either way.
      if (errno != EAGAIN && errno != EOPNOTSUPP) return -errno;
      return workers_->pread(fd, a.buf, a.len, a.offset);
    }
  }

  int64_t do_accept(IoRequest& r) {
    int64_t fd = retry(r, POLLIN, [&] {
      return ::accept4(r.fd, r.args.accept.addr, r.args.accept.addrlen, r.args.accept.flags);
    });
    if (fd >= 0) current()->forget(static_cast<int>(fd));  // a new file: nothing registered
    return fd;
  }

  int64_t do_connect(IoRequest& r) {
    current()->forget(r.fd);  // a new socket, whatever this number held before
    if (::connect(r.fd, r.args.connect.addr, r.args.connect.addrlen) == 0) return 0;
    if (errno != EINPROGRESS && errno != EAGAIN) return -errno;
    int64_t w = current()->wait_ready(r.fd, POLLOUT, r.deadline, r.token);
    if (w < 0) return w;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(r.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return -errno;
    return -err;
  }

  int64_t do_splice(IoRequest& r) {
    bool wait_in = false;
    while (true) {
      if (r.token && r.token->cancelled()) return -ECANCELED;
      const SpliceArgs& a = r.args.splice;
      loff_t in = a.off_in, out = a.off_out;
      ssize_t n = ::splice(r.fd, a.off_in >= 0 ? &in : nullptr, a.fd_out,
                           a.off_out >= 0 ? &out : nullptr, a.len, a.flags | SPLICE_F_NONBLOCK);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -errno;
      // Either the destination is full or a source pipe is empty: wait on each in turn.
      int64_t w = wait_in ? current()->wait_ready(r.fd, POLLIN, r.deadline, r.token)
                          : current()->wait_ready(a.fd_out, POLLOUT, r.deadline, r.token);
      if (w < 0) return w;
      wait_in = !wait_in;
    }
  }

  // Parks until fd is ready for events, the deadline, or a cancel; returns revents or -errno.
  int64_t wait_ready(int fd, short events, TimePoint deadline, CancelToken* token) {
    ReadyWait w;
    return wait_ready(w, fd, events, deadline, token);
  }

  // wait_ready() in `w`, the caller's (which may name a receive to make: see do_recv).
  int64_t wait_ready(ReadyWait& w, int fd, short events, TimePoint deadline, CancelToken* token) {
    // on_complete unset: the completion wakes this fiber
    w.io.reset(this, token);
    w.io.waiter.bind_current();
    int rc = arm(w, fd, events, deadline);
    if (rc < 0) return rc;
    w.io.waiter.wait();
    w.io.end();
    return w.io.result;
  }

  int arm_ready(ReadyWait& r, int fd, short events, TimePoint deadline, CancelToken* token,
                ReadyWait::Callback fn, void* arg) override {
    r.io.reset(this, token);
    r.io.on_complete = [](IoWait* w) { finish_ready(*w->ready); };
    r.recv = nullptr;  // a callback's fiber makes its own receive
    r.fn = fn;
    r.arg = arg;
    return arm(r, fd, events, deadline);
  }

  // Registers w with epoll (and its deadline with this processor's timers).
  int arm(ReadyWait& w, int fd, short events, TimePoint deadline) {
    w.io.ready = &w;
    w.driver = this;
    w.done = false;
    w.fired = false;
    w.has_timer = false;
    if (!w.io.begin()) return -ECANCELED;
    w.fd = fd;
    w.dup_fd = false;
    w.slot = alloc_slot(&w);
    epoll_event ev{};
    ev.events = static_cast<uint32_t>(events) | EPOLLONESHOT;
    ev.data.u64 = (uint64_t{slots_[w.slot].gen} << 32) | w.slot;
    int rc = register_fd(fd, ev, w.slot);
    if (rc < 0 && errno == EEXIST) {
      // Another wait of this processor holds fd (two acceptors sharing a listening socket,
      // say). epoll keys a registration by file and descriptor, so a duplicate descriptor
      // of the same file waits beside it; rare, so the dup costs nothing on the usual path.
      int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (d >= 0) {
        w.fd = d;
        w.dup_fd = true;
        rc = epoll_ctl(epfd_, EPOLL_CTL_ADD, d, &ev);
      }
    }
    if (rc < 0) {
      int err = errno;
      if (w.dup_fd) ::close(w.fd);
      free_slot(w.slot);
      w.io.end();
      return -err;
    }
    if (deadline != kNoDeadline) {
      w.has_timer = true;
      w.timer.deadline_ns = to_ns(deadline);
      // The callback only queues the completion, like a cancel: fire_due touches the entry
      // after its callback returns, and a completed wait's owner may free it at once.
      w.timer.on_fire = [](void* a) {
        auto* rw = static_cast<ReadyWait*>(a);
        rw->fired = true;
        rw->driver->queue_cancel(&rw->io);
      };
      w.timer.arg = &w;
      timers().add(&w.timer);
    }
    return 0;
  }

  // Owner thread: ends a wait (event, timeout or cancel) and wakes its fiber or starts its
  // callback.
  void complete(ReadyWait* w, int64_t result, bool by_event) {
    if (w->done) return;
    w->done = true;
    if (by_event && w->recv) receive_now(*w);  // before the duplicate (if any) closes
    if (w->dup_fd) {
      // Removed first: the duplicate's registration would outlive its close while the caller's
      // descriptor keeps the file open. Closing it leaves the caller's fd as it was.
      epoll_ctl(epfd_, EPOLL_CTL_DEL, w->fd, nullptr);
      ::close(w->fd);
    } else if (!owns_registration(*w)) {
      // The number names another file now, registered by a later wait: ours was closed, and
      // its registration went with it. Leave that one alone.
    } else if (by_event) {
      reg(w->fd).state = Reg::idle;  // EPOLLONESHOT disarmed it
    } else {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, w->fd, nullptr);  // still armed: a timeout or a cancel
      reg(w->fd).state = Reg::none;
    }
    free_slot(w->slot);
    if (w->has_timer) {
      // Never from the timer's callback (it only queues): the entry cannot be firing now.
      TimerHeap::cancel(&w->timer);
      w->has_timer = false;
    }
    w->io.result = result;
    mark_completed(&w->io);
    if (w->io.on_complete) {
      w->io.on_complete(&w->io);
    } else {
      w->io.waiter.wake(false);
    }
  }

  uint32_t alloc_slot(ReadyWait* w) {
    uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = static_cast<uint32_t>(slots_.size());
      slots_.push_back({});
    }
    slots_[i].wait = w;
    return i;
  }

  void free_slot(uint32_t i) {
    slots_[i].wait = nullptr;
    ++slots_[i].gen;
    free_.push_back(i);
  }

  // Completes the queued cancels (and expired deadlines); returns how many.
  int flush_cancels() {
    int n = 0;
    for (IoWait* w = take_cancels(); w; ++n) {
      IoWait* next = w->next_cancel;
      ReadyWait* rw = w->ready;
      bool timed_out = rw->fired && !(w->token() && w->token()->cancelled());
      complete(rw, timed_out ? -ETIMEDOUT : -ECANCELED, false);
      w = next;
    }
    return n;
  }

  int wait_events(int64_t timeout_ns) {
    epoll_event evs[256];
    timespec ts{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
    bump_owned(enters_);
    int n = epoll_pwait2(epfd_, evs, 256, timeout_ns < 0 ? nullptr : &ts, nullptr);
    for (int i = 0; i < n; ++i) {
      uint64_t d = evs[i].data.u64;
      if (d == kWakeTag) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
        continue;
      }
      uint32_t slot = static_cast<uint32_t>(d);
      uint32_t gen = static_cast<uint32_t>(d >> 32);
      if (slot < slots_.size() && slots_[slot].gen == gen && slots_[slot].wait) {
        bump_owned(completions_);
        complete(slots_[slot].wait, static_cast<int64_t>(evs[i].events), true);
      }
    }
    flush_cancels();  // requests that arrived while we slept
    return n > 0 ? n : 0;
  }

  int epfd_ = -1;
  int wake_fd_ = -1;
  std::vector<FdWait> slots_;
  std::vector<uint32_t> free_;
  std::vector<RegEntry> reg_;             // by descriptor
  std::shared_ptr<FileWorkers> workers_;  // shared by every processor's driver
};

}  // namespace

std::unique_ptr<IoDriver> make_epoll_driver(const IoOptions& options,
                                            std::shared_ptr<FileWorkers> workers) {
  return std::make_unique<EpollDriver>(options, std::move(workers));
}

}  // namespace weft::rt
