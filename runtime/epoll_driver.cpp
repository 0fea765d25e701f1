// The epoll backend: readiness-based I/O for where io_uring is blocked (seccomp, sysctl).
//
// Socket operations are tried at once with non-blocking system calls; on EAGAIN the fiber
// waits for readiness, in one of two ways.
// A connection accepted by io::accept (fd_generation.hpp) is registered once per processor
// that waits on it, edge-triggered for input and output, and stays registered until it
// closes (the close drops the registration; io::close ends its generation): no epoll_ctl per
// wait. The processor keeps a ready bit per direction, set by each event and cleared when a
// try says EAGAIN (or a receive comes back short: the queue was empty then, so the next
// bytes bring a new edge), and the waits parked on each direction; a wait finds a set bit
// and goes on at once. Each event carries the connection's generation, so an event of a
// closed connection cannot wake a wait on the number's next owner, on this processor or
// another.
// Every other descriptor (a listening socket, a connecting one, a pipe) is added to the
// processor's epoll with EPOLLONESHOT, naming a slot of the processor's wait table (index and
// generation, so an event that arrives after the wait ended is recognised as stale). A wait
// ended by its event leaves the registration in epoll, disarmed by EPOLLONESHOT, and the next
// wait on that descriptor re-arms it with one EPOLL_CTL_MOD: one system call per wait instead
// of an ADD and a DEL. A wait ended by its deadline or a cancel deletes the registration only
// if it is still its own (the table records which wait armed it): its descriptor may have
// been closed and the number registered again by a newer wait.
// Events, timeouts (the processor's timer heap) and cancel requests all complete a wait on
// the owner thread before it wakes the fiber; so nothing refers to the wait once the fiber
// runs again.
// An accept that follows another with no poll of the processor's epoll between (while a
// connection of the processor waits for an event) first waits for the next poll: under a
// flood the established connections' events are reaped, and their fibers queued, between
// two accepts, as io_uring's accept completions are (admission fairness;
// docs/benchmarks.md, "epoll under overload").
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

#include "runtime/fd_generation.hpp"
#include "runtime/file_workers.hpp"
#include "runtime/io.hpp"
#include "runtime/io_driver_internal.hpp"
#include "runtime/io_epoch.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/timer.hpp"

namespace weft::rt {
namespace {

constexpr uint64_t kWakeTag = ~uint64_t{0};
// An event's data: the wake tag; kEdgeBit, a 31-bit connection generation and the descriptor
// (an edge-triggered registration); or a 31-bit slot generation and the slot (a oneshot one).
constexpr uint64_t kEdgeBit = uint64_t{1} << 63;
constexpr uint32_t kGenMask = 0x7fff'ffff;
// What wakes a wait for input, and for output, on an edge-triggered registration.
constexpr uint32_t kInEvents = EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR;
constexpr uint32_t kOutEvents = EPOLLOUT | EPOLLHUP | EPOLLERR;

// What a wait knows of its descriptor's readiness, which decides what a set ready bit of an
// edge-triggered registration means to it.
enum class Known : uint8_t {
  drained,  // its try just said EAGAIN: the bit is stale; wait for the next edge
  unknown,  // it tries right after the wait: a set bit lets it try at once
  report,   // it reports readiness (io::poll, when_ready): a set bit is checked with poll(2)
};

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
    // A completed cancel or timeout made a fiber ready, or an accept waits for this round:
    // look for events, do not sleep.
    const bool ready = flush_cancels() > 0 || !rounds_.empty();
    wait_events(ready ? 0 : timeout_ns);
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
        return current()->wait_ready(r.fd, r.args.poll.events, r.deadline, r.token, Known::report);
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
    Known known = Known::unknown;
    while (true) {
      if (r.token && r.token->cancelled()) return -ECANCELED;
      if (wait) {
        ReadyState w;
        w.recv = &r;
        const int64_t events = current()->wait_ready(w, r.fd, POLLIN, r.deadline, r.token, known);
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
        if (drains(a, n)) current()->drained(r.fd, POLLIN);
        set_io_stamp(io_epoch());
        return err ? -err : n;
      }
      wait = true;
      known = Known::drained;
    }
  }

  // Returns whether a receive of n bytes with `a` found the connection's queue emptied: it
  // came back short (accepted connections are byte streams, so a short receive took all
  // there was). A peek leaves the bytes where they were.
  static bool drains(const SocketIoArgs& a, ssize_t n) {
    return n > 0 && static_cast<std::size_t>(n) < a.len && !(a.msg_flags & MSG_PEEK);
  }

  // Makes the receive that reaped wait `w` is for (see do_recv); leaves -EAGAIN in
  // w.received when there was nothing after all, for the fiber to wait again.
  void receive_now(ReadyState& w) {
    const IoRequest& r = *w.recv;
    const SocketIoArgs& a = r.args.socket;
    ssize_t n;
    do {
      n = ::recv(r.fd, a.buf, a.len, a.msg_flags | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    w.received = n < 0 ? -errno : n;
    w.io.stamp = io_epoch();
    if (w.edge && (w.received == -EAGAIN || drains(a, n))) reg(w.fd).ready_in = false;
  }

  // The epoll driver of the processor the calling fiber runs on now: a wait registers in
  // that processor's wait table, which only its owner thread touches.
  static EpollDriver* current() {
    return static_cast<EpollDriver*>(Processor::current()->io_driver());
  }

  struct FdWait {
    ReadyState* wait = nullptr;
    uint32_t gen = 0;
  };

  // What this processor's epoll holds for a descriptor. `idle`: registered oneshot and
  // disarmed (its last wait ended by its event), so the next wait re-arms it with
  // EPOLL_CTL_MOD; `armed`: a oneshot wait holds it. Closing a file removes its
  // registrations, so a number may say `idle` for a closed descriptor: the MOD then fails with
  // ENOENT and the wait adds it. accept and connect reset the number they hand out, which
  // keeps that detour off the usual path. An armed registration also names the wait that
  // armed it (its wait-table slot, held until that wait completes): a wait whose descriptor
  // was closed meanwhile, and whose number a new wait has registered again, must not touch
  // the new registration when it completes.
  // `edge`: an accepted connection's edge-triggered registration, valid while the number's
  // generation is still `gen` (a later one: the connection closed, and the kernel dropped the
  // registration with it).
  enum class Reg : uint8_t { none, idle, armed, edge };
  struct RegEntry {
    Reg state = Reg::none;
    bool ready_in = false;  // edge: input came since the last EAGAIN (or short receive)
    bool ready_out = false;
    uint32_t slot = 0;         // armed: the wait's slot
    uint32_t gen = 0;          // edge: the connection's generation (fd_generation.hpp)
    ReadyState* in = nullptr;  // edge: the wait parked for input, if any
    ReadyState* out = nullptr;
  };

  RegEntry& reg(int fd) {
    if (static_cast<std::size_t>(fd) >= reg_.size()) reg_.resize(static_cast<std::size_t>(fd) + 64);
    return reg_[static_cast<std::size_t>(fd)];
  }

  void forget(int fd) { reg(fd) = {}; }

  // Returns fd's entry, emptied first when it is the edge registration of a connection that
  // has closed since (the kernel dropped that registration with the file).
  RegEntry& valid_reg(int fd) {
    RegEntry& e = reg(fd);
    if (e.state == Reg::edge && e.gen != fd_generation::current(fd)) e = {};
    return e;
  }

  // After a try on fd that found nothing more for `events` (EAGAIN or a short receive):
  // clears the ready bit of its edge registration, so the next wait waits for a new edge.
  void drained(int fd, short events) {
    RegEntry& e = valid_reg(fd);
    if (e.state != Reg::edge) return;
    (events == POLLIN ? e.ready_in : e.ready_out) = false;
  }

  // Returns whether w's own registration is the one armed under its descriptor's number.
  bool owns_registration(const ReadyState& w) {
    const RegEntry& e = reg(w.fd);
    return e.state == Reg::armed && e.slot == w.slot;
  }

  // Registers (or re-arms) fd for one event of the wait in `slot`; returns epoll_ctl's
  // result (errno set).
  int register_fd(int fd, epoll_event& ev, uint32_t slot) {
    Reg state = valid_reg(fd).state;
    int rc = -1;
    if (state == Reg::armed || state == Reg::edge) {
      errno = EEXIST;  // another wait of this processor holds fd, or its edge registration does
    } else if (state == Reg::idle) {
      rc = epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev);
      if (rc < 0 && errno == ENOENT) rc = epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    } else {
      rc = epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    }
    if (rc == 0) reg(fd) = {.state = Reg::armed, .slot = slot};
    return rc;
  }

  // Runs attempt() until it does not say EAGAIN, waiting for `events` on the request's fd.
  template <typename Attempt>
  int64_t retry(IoRequest& r, short events, Attempt attempt) {
    int fd = readiness_fd(r);
    if (r.poll_first) {
      int64_t w = current()->wait_ready(fd, events, r.deadline, r.token, Known::unknown);
      if (w < 0) return w;
    }
    while (true) {
      if (r.token && r.token->cancelled()) return -ECANCELED;
      auto n = attempt();
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -errno;
      int64_t w = current()->wait_ready(fd, events, r.deadline, r.token, Known::drained);
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

  // At most one connection per poll of the processor's epoll: an accept that follows
  // another with no poll between waits for the next one before it tries. accept4 succeeds
  // without waiting while the listen queue holds anyone, so an acceptor that looped on it
  // would take a flood into the server while the events of the connections already in it
  // waited for a poll; waiting a round lets that poll queue their fibers first (issue 46:
  // failed sessions past saturation, docs/benchmarks.md).
  int64_t do_accept(IoRequest& r) {
    current()->pace_accept();
    int64_t fd = retry(r, POLLIN, [&] {
      return ::accept4(r.fd, r.args.accept.addr, r.args.accept.addrlen, r.args.accept.flags);
    });
    if (fd >= 0) {
      EpollDriver* d = current();       // the wait may have moved the fiber
      d->forget(static_cast<int>(fd));  // a new file: nothing registered
      d->accepted_in_poll_ = d->polls_;
      fd_generation::begin_connection(static_cast<int>(fd));
    }
    return fd;
  }

  // Parks the calling fiber, when this processor has accepted since its last poll of its
  // epoll and some connection of its waits for an event, until the next poll has handled
  // what it reaped (at once when the processor has nothing else to run). Waiting on every
  // accept cost a poll per connection where none waits (one-request connections whose
  // requests came with them): 3-8% of their requests per CPU-second (docs/benchmarks.md).
  void pace_accept() {
    if (polls_ != accepted_in_poll_) return;  // polled since: its events are queued already
    if (edge_waits_ == 0) return;             // a poll would wake no connection
    Waiter w;
    rounds_.push_back(&w);
    w.wait();
  }

  int64_t do_connect(IoRequest& r) {
    current()->forget(r.fd);  // a new socket, whatever this number held before
    if (::connect(r.fd, r.args.connect.addr, r.args.connect.addrlen) == 0) return 0;
    if (errno != EINPROGRESS && errno != EAGAIN) return -errno;
    int64_t w = current()->wait_ready(r.fd, POLLOUT, r.deadline, r.token, Known::drained);
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
      int64_t w =
          wait_in ? current()->wait_ready(r.fd, POLLIN, r.deadline, r.token, Known::drained)
                  : current()->wait_ready(a.fd_out, POLLOUT, r.deadline, r.token, Known::drained);
      if (w < 0) return w;
      wait_in = !wait_in;
    }
  }

  // Parks until fd is ready for events, the deadline, or a cancel; returns revents or -errno.
  int64_t wait_ready(int fd, short events, TimePoint deadline, CancelToken* token, Known known) {
    ReadyState w;
    return wait_ready(w, fd, events, deadline, token, known);
  }

  // wait_ready() in `w`, the caller's (which may name a receive to make: see do_recv).
  int64_t wait_ready(ReadyState& w, int fd, short events, TimePoint deadline, CancelToken* token,
                     Known known) {
    // on_complete unset: the completion wakes this fiber
    w.io.reset(this, token);
    w.io.waiter.bind_current();
    int rc = arm(w, fd, events, deadline, known);
    if (rc < 0) return rc;
    if (rc == 0) w.io.waiter.wait();  // else ready already: nothing was armed
    w.io.end();
    return rc > 0 ? rc : w.io.result;
  }

  int arm_ready(ReadyWait& wait, int fd, short events, TimePoint deadline, CancelToken* token,
                ReadyWait::Callback fn, void* arg) override {
    ReadyState& r = ReadyState::of(wait);
    r.io.reset(this, token);
    r.io.on_complete = [](IoWait* w) { finish_ready(*w->ready); };
    r.recv = nullptr;  // a callback's fiber makes its own receive
    r.fn = fn;
    r.arg = arg;
    const int rc = arm(r, fd, events, deadline, Known::report);
    if (rc <= 0) return rc;
    r.done = true;  // ready already: nothing was armed, so the callback starts now
    r.io.result = rc;
    mark_completed(&r.io);
    finish_ready(r);
    return 0;
  }

  // Registers w with epoll (and its deadline with this processor's timers); returns 0, the
  // ready events when fd is known to be ready already (nothing armed; w's IoWait is begun),
  // or -errno (w's IoWait ended).
  int arm(ReadyState& w, int fd, short events, TimePoint deadline, Known known) {
    w.io.ready = &w;
    w.driver = this;
    w.done = false;
    w.fired = false;
    w.has_timer = false;
    w.edge = false;
    w.dup_fd = false;
    w.fd = fd;
    if (!w.io.begin()) return -ECANCELED;
    int rc = -EEXIST;
    const bool one_direction = events == POLLIN || events == POLLOUT;
    if (one_direction && fd_generation::is_connection(fd_generation::current(fd))) {
      rc = arm_edge(w, events, known);
    }
    if (rc == -EEXIST) rc = arm_oneshot(w, events);  // also when a wait holds the edge one
    if (rc < 0) {
      w.io.end();
      return rc;
    }
    if (rc > 0) return rc;
    if (deadline != kNoDeadline) {
      w.has_timer = true;
      w.timer.deadline_ns = to_ns(deadline);
      // The callback only queues the completion, like a cancel: fire_due touches the entry
      // after its callback returns, and a completed wait's owner may free it at once.
      w.timer.on_fire = [](void* a) {
        auto* rw = static_cast<ReadyState*>(a);
        rw->fired = true;
        rw->driver->queue_cancel(&rw->io);
      };
      w.timer.arg = &w;
      timers().add(&w.timer);
    }
    return 0;
  }

  // Parks w on its connection's edge-triggered registration, registering it first when this
  // processor has not since the connection was accepted; returns 0, the ready events (a set
  // ready bit, as `known` reads it), -EEXIST when another wait holds that direction, or -errno.
  int arm_edge(ReadyState& w, short events, Known known) {
    const uint32_t gen = fd_generation::current(w.fd);
    const Reg state = valid_reg(w.fd).state;
    // A oneshot wait holds the file's registration (one for both directions): wait beside it.
    if (state == Reg::armed) return -EEXIST;
    if (state != Reg::edge) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.u64 = kEdgeBit | (uint64_t{gen & kGenMask} << 32) | static_cast<uint32_t>(w.fd);
      int rc = epoll_ctl(epfd_, EPOLL_CTL_ADD, w.fd, &ev);
      // The file is registered here already (a oneshot wait before the number was known as a
      // connection): take that registration over.
      if (rc < 0 && errno == EEXIST) rc = epoll_ctl(epfd_, EPOLL_CTL_MOD, w.fd, &ev);
      if (rc < 0) return -errno;
      // Both bits clear: the kernel queues what is ready now as the registration's first event.
      reg(w.fd) = {.state = Reg::edge, .gen = gen};
    }
    RegEntry& e = reg(w.fd);
    const bool in = events == POLLIN;
    bool& ready = in ? e.ready_in : e.ready_out;
    if (known == Known::drained) ready = false;
    if (ready) {
      if (known == Known::unknown) return events;
      pollfd p{w.fd, events, 0};
      if (::poll(&p, 1, 0) > 0) return p.revents;
      ready = false;  // gone since the event (a caller outside the runtime's calls took it)
    }
    ReadyState*& parked = in ? e.in : e.out;
    if (parked) return -EEXIST;
    parked = &w;
    w.edge = true;
    ++edge_waits_;
    return 0;
  }

  // Arms a oneshot registration for w in a wait-table slot; returns 0 or -errno.
  int arm_oneshot(ReadyState& w, short events) {
    const int fd = w.fd;
    w.slot = alloc_slot(&w);
    epoll_event ev{};
    ev.events = static_cast<uint32_t>(events) | EPOLLONESHOT;
    ev.data.u64 = (uint64_t{slots_[w.slot].gen & kGenMask} << 32) | w.slot;
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
      w.dup_fd = false;
      free_slot(w.slot);
      return -err;
    }
    return 0;
  }

  // Owner thread: ends a wait (event, timeout or cancel) and wakes its fiber or starts its
  // callback.
  void complete(ReadyState* w, int64_t result, bool by_event) {
    if (w->done) return;
    w->done = true;
    if (by_event && w->recv) receive_now(*w);  // before the duplicate (if any) closes
    release(*w, by_event);
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

  // Drops what w holds of this processor's epoll: its place on its connection's edge
  // registration (which stays), or its oneshot registration and slot.
  void release(ReadyState& w, bool by_event) {
    if (w.edge) {
      --edge_waits_;
      // The entry may belong to the number's next connection by now: only w's own place goes.
      RegEntry& e = reg(w.fd);
      if (e.in == &w) e.in = nullptr;
      if (e.out == &w) e.out = nullptr;
      return;
    }
    if (w.dup_fd) {
      // Removed first: the duplicate's registration would outlive its close while the caller's
      // descriptor keeps the file open. Closing it leaves the caller's fd as it was.
      epoll_ctl(epfd_, EPOLL_CTL_DEL, w.fd, nullptr);
      ::close(w.fd);
    } else if (!owns_registration(w)) {
      // The number names another file now, registered by a later wait: ours was closed, and
      // its registration went with it. Leave that one alone.
    } else if (by_event) {
      reg(w.fd).state = Reg::idle;  // EPOLLONESHOT disarmed it
    } else {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, w.fd, nullptr);  // still armed: a timeout or a cancel
      reg(w.fd).state = Reg::none;
    }
    free_slot(w.slot);
  }

  uint32_t alloc_slot(ReadyState* w) {
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
      ReadyState* rw = w->ready;
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
    ++polls_;
    int n = epoll_pwait2(epfd_, evs, 256, timeout_ns < 0 ? nullptr : &ts, nullptr);
    for (int i = 0; i < n; ++i) {
      uint64_t d = evs[i].data.u64;
      if (d == kWakeTag) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
        continue;
      }
      if (d & kEdgeBit) {
        on_edge_event(d, evs[i].events);
        continue;
      }
      uint32_t slot = static_cast<uint32_t>(d);
      uint32_t gen = static_cast<uint32_t>(d >> 32);
      if (slot < slots_.size() && (slots_[slot].gen & kGenMask) == gen && slots_[slot].wait) {
        bump_owned(completions_);
        complete(slots_[slot].wait, static_cast<int64_t>(evs[i].events), true);
      }
    }
    flush_cancels();  // requests that arrived while we slept
    // The accepts waiting for this round go behind the fibers its events woke.
    WaitList round = rounds_.take_all();
    round.wake_all(false);
    return n > 0 ? n : 0;
  }

  // An event of a connection's edge-triggered registration: sets its ready bits and
  // completes the waits parked on them. One carrying an older generation than the entry's
  // is a closed connection's (its file kept open by a duplicate elsewhere): dropped.
  void on_edge_event(uint64_t d, uint32_t events) {
    const auto fd = static_cast<uint32_t>(d);
    const auto gen = static_cast<uint32_t>(d >> 32) & kGenMask;
    if (fd >= reg_.size()) return;
    RegEntry& e = reg_[fd];
    if (e.state != Reg::edge || (e.gen & kGenMask) != gen) return;
    if (events & kInEvents) {
      e.ready_in = true;
      if (e.in) {
        bump_owned(completions_);
        complete(e.in, events & kInEvents, true);  // unparks it from the entry
      }
    }
    if (events & kOutEvents) {
      e.ready_out = true;
      if (e.out) {
        bump_owned(completions_);
        complete(e.out, events & kOutEvents, true);
      }
    }
  }

  int epfd_ = -1;
  int wake_fd_ = -1;
  std::vector<FdWait> slots_;
  std::vector<uint32_t> free_;
  std::vector<RegEntry> reg_;                 // by descriptor
  WaitList rounds_;                           // accepts waiting for the next poll (pace_accept)
  uint64_t polls_ = 0;                        // epoll_pwait2 calls so far
  uint64_t edge_waits_ = 0;                   // waits parked on connections' edge registrations
  uint64_t accepted_in_poll_ = ~uint64_t{0};  // polls_ at the last accept
  std::shared_ptr<FileWorkers> workers_;      // shared by every processor's driver
};

}  // namespace

std::unique_ptr<IoDriver> make_epoll_driver(const IoOptions& options,
                                            std::shared_ptr<FileWorkers> workers) {
  return std::make_unique<EpollDriver>(options, std::move(workers));
}

}  // namespace weft::rt
