// The io_uring backend: one ring per processor, set up on the processor's own thread.
//
// Submissions queue up in the SQ while the processor runs fibers and go to the kernel in
// one io_uring_enter when it polls (its queue ran dry, or every 61 picks) or parks. A parked
// processor blocks in io_uring_enter waiting for one completion, with its next timer as the
// timeout. Other threads wake it by writing an eventfd that the ring keeps a read pending
// on. Deadlines are entries in the processor's timer heap that cancel the operation
// (IORING_OP_ASYNC_CANCEL) when they fire; linked timeouts measured slower here.
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <liburing.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/io_driver_internal.hpp"
#include "runtime/io_epoch.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/timer.hpp"

namespace weft::rt {
namespace {

constexpr uint64_t kWakeTag = 1;     // the eventfd read
constexpr uint64_t kIgnoreTag = 2;   // cancels, MSG_RING sends: nothing waits for them
constexpr uint64_t kMsgWakeTag = 3;  // a MSG_RING wake-up landing in this ring

struct FlagSet {
  unsigned flags;
  const char* name;
};

// Best first; each later one drops what an older kernel refuses.
constexpr FlagSet kFlagSets[] = {
    {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
     "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG"},
    {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN"},
    {IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, "COOP_TASKRUN|TASKRUN_FLAG"},
    {IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
    {0, "none"},
};

std::once_flag g_logged;

// Which fd and events to wait for when an operation on a non-blocking fd says -EAGAIN.
struct Readiness {
  int fd;
  short events;
};

Readiness readiness_for(const IoRequest& r) {
  switch (r.op) {
    case IoOpcode::accept:
    case IoOpcode::recv:
    case IoOpcode::read:
      return {r.fd, POLLIN};
    default:
      return {readiness_fd(r), POLLOUT};
  }
}

class IoUringDriver final : public IoDriver {
 public:
  explicit IoUringDriver(const IoOptions& o) : options_(o) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
      std::perror("weft: eventfd");
      std::abort();
    }
  }

  ~IoUringDriver() override {
    if (ready_) io_uring_queue_exit(&ring_);
    ::close(wake_fd_);
  }

  const char* name() const override { return "io_uring"; }

  void set_up() override {
    int rc = -EINVAL;
    const FlagSet* chosen = nullptr;
    for (const FlagSet& set : kFlagSets) {
      io_uring_params p{};
      p.flags = set.flags | IORING_SETUP_CQSIZE;
      p.cq_entries = options_.ring_entries * 4;  // room for completions of many in flight
      rc = io_uring_queue_init_params(options_.ring_entries, &ring_, &p);
      if (rc == 0) {
        chosen = &set;
        break;
      }
    }
    if (!chosen) {
      std::fprintf(stderr, "weft: io_uring setup failed on a processor thread: %s\n",
                   std::strerror(-rc));
      std::abort();
    }
    ready_ = true;
    unsigned workers[2] = {options_.iowq_bounded, options_.iowq_unbounded};
    int wrc = io_uring_register_iowq_max_workers(&ring_, workers);
    std::call_once(g_logged, [&] {
      spdlog::info(
          "io backend: io_uring, ring flags {}, {} entries; kernel workers per ring "
          "bounded {} unbounded {}{}",
          chosen->name, options_.ring_entries, options_.iowq_bounded, options_.iowq_unbounded,
          wrc < 0 ? std::string{" (IOWQ_MAX_WORKERS refused: "} + std::strerror(-wrc) + ")"
                  : std::string{});
    });
    arm_wake();
    io_uring_submit(&ring_);
  }

  int poll() override {
    flush_cancels();
    unsigned kflags = IO_URING_READ_ONCE(*ring_.sq.kflags);
    if (io_uring_sq_ready(&ring_) > 0 || (kflags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))) {
      enter_submit();
    }
    return reap();
  }

  void park(int64_t timeout_ns) override {
    flush_cancels();
    if (!wake_armed_) arm_wake();
    io_uring_cqe* cqe = nullptr;
    if (io_uring_cq_ready(&ring_) == 0) {
      __kernel_timespec ts;
      __kernel_timespec* tsp = nullptr;
      if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1'000'000'000;
        ts.tv_nsec = timeout_ns % 1'000'000'000;
        tsp = &ts;
      }
      bump_owned(enters_);
      io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, tsp, nullptr);
    } else {
      enter_submit();
    }
    reap();
  }

  void unpark() override {
    if (options_.wake == WakeMethod::msg_ring && ready_) {
      // From a processor with a ring of its own: post a completion straight into ours.
      Processor* p = Processor::current();
      auto* mine = p ? dynamic_cast<IoUringDriver*>(p->io_driver()) : nullptr;
      if (mine && mine != this && mine->ready_ && mine->post_wake(ring_.ring_fd)) return;
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
  }

  int64_t execute(IoRequest& req) override {
    if (req.op == IoOpcode::sendfile) return do_sendfile(req);
    // A non-blocking socket (or pipe) can still say -EAGAIN through io_uring: then wait
    // until it is ready (a poll) and try again. Each phase parks the fiber, which may then
    // resume on another processor: every phase goes to the ring of the processor the fiber
    // is on when it starts (a ring takes submissions from its own thread only).
    bool poll_phase = false;
    while (true) {
      int64_t res = current()->phase(req, poll_phase);
      if (poll_phase) {
        if (res < 0) return res;
        if (req.op == IoOpcode::connect) return socket_error(req.fd);
        poll_phase = false;
        continue;
      }
      if (res == -EAGAIN || res == -EINTR || (req.op == IoOpcode::connect && res == -EINPROGRESS)) {
        if (req.token && req.token->cancelled()) return -ECANCELED;
        if (req.deadline != kNoDeadline && now() >= req.deadline) return -ETIMEDOUT;
        poll_phase = true;
        continue;
      }
      return res;
    }
  }

  // One submission of `req` (or of a readiness poll for it) on this processor's ring, and
  // its completion. Deadlines live in this processor's timer heap (a few instructions to arm
  // and disarm) rather than as linked timeouts: on this VM arming a kernel hrtimer per
  // operation cost about a tenth of the server's time. On expiry the timer (which fires on
  // this processor, the ring's owner) queues a cancel of the operation.
  int64_t phase(const IoRequest& req, bool poll_phase) {
    IoWait w(this, req.token);
    if (!w.begin()) return -ECANCELED;
    Deadline dl{this, &w};
    TimerEntry timer;
    bool armed = req.deadline != kNoDeadline;
    if (armed) {
      timer.deadline_ns = to_ns(req.deadline);
      timer.on_fire = [](void* arg) {
        auto* d = static_cast<Deadline*>(arg);
        d->fired = true;
        d->driver->queue_cancel(d->wait);
      };
      timer.arg = &dl;
      timers().add(&timer);
    }
    int64_t res = submit_and_wait(req, w, poll_phase);
    if (!poll_phase && receives(req)) set_io_stamp(w.stamp);
    // The fiber may run elsewhere now: both calls below are safe from any thread.
    if (armed) TimerHeap::cancel(&timer);
    w.end();
    if (res == -ECANCELED && !(req.token && req.token->cancelled()) && dl.fired) {
      return -ETIMEDOUT;
    }
    return res;
  }

  void flush() override {
    if (io_uring_sq_ready(&ring_) > 0) io_uring_submit(&ring_);
  }

  void close_detached(int fd) override {
    // Nothing waits: the close rides along with the next io_uring_enter, and only a failure
    // (which nobody could act on) posts a completion, tagged to be ignored.
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_close(sqe, fd);
    io_uring_sqe_set_flags(sqe, IOSQE_CQE_SKIP_SUCCESS);
    io_uring_sqe_set_data64(sqe, kIgnoreTag);
  }

  int arm_ready(ReadyWait& wait, int fd, short events, TimePoint deadline, CancelToken* token,
                ReadyWait::Callback fn, void* arg) override {
    ReadyState& r = ReadyState::of(wait);
    r.io.reset(this, token);
    r.io.ready = &r;
    r.io.on_complete = [](IoWait* w) { finish_ready(*w->ready); };
    r.fn = fn;
    r.arg = arg;
    r.fd = fd;
    r.fired = false;
    r.done = false;
    r.driver = this;
    r.has_timer = false;
    if (!r.io.begin()) return -ECANCELED;
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_poll_add(sqe, fd, static_cast<unsigned>(events));
    io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(&r.io));
    if (deadline != kNoDeadline) {
      r.has_timer = true;
      r.timer.deadline_ns = to_ns(deadline);
      r.timer.on_fire = [](void* a) {
        auto* rw = static_cast<ReadyState*>(a);
        rw->fired = true;
        rw->driver->queue_cancel(&rw->io);
      };
      r.timer.arg = &r;
      timers().add(&r.timer);
    }
    return 0;
  }

 private:
  // The io_uring driver of the processor the calling fiber runs on now.
  static IoUringDriver* current() {
    return static_cast<IoUringDriver*>(Processor::current()->io_driver());
  }

  struct Deadline {
    IoUringDriver* driver;
    IoWait* wait;
    bool fired = false;
  };

  static int64_t socket_error(int fd) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return -errno;
    return -err;
  }

  io_uring_sqe* get_sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (!sqe) {
      enter_submit();
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  void enter_submit() {
    bump_owned(enters_);
    int rc = io_uring_submit_and_get_events(&ring_);
    if (io_uring_submit_result) rc = io_uring_submit_result(rc);
    if (rc == -EBUSY) reap();  // CQ backlog: make room, the next poll submits
  }

  // Submits what is queued without ever reaping (a plain enter; on -EBUSY the entries stay
  // queued for the next poll); returns whether the kernel took them.
  bool submit_only() {
    bump_owned(enters_);
    int rc = io_uring_submit(&ring_);
    if (io_uring_submit_result) rc = io_uring_submit_result(rc);
    return rc >= 0;
  }

  // Owner thread (this is the caller's own ring): wakes the ring `target_fd` with a MSG_RING
  // completion; returns false when it could not, for the caller to write the eventfd. Never
  // reaps: unpark() runs inside reap() (a completion wakes a fiber, whose push wakes a
  // sleeper) and inside CancelToken::cancel, and a reap here would walk the completions the
  // outer reap is walking (handling them twice and advancing the head past the rest), or end
  // a wait of the token being cancelled. While reaping it only queues: reap() sends the
  // wake-ups queued during its walk in one enter when it is done.
  bool post_wake(int target_fd) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // not get_sqe(): a full SQ would enter
    if (!sqe) return false;
    io_uring_prep_msg_ring(sqe, target_fd, 0, kMsgWakeTag, 0);
    io_uring_sqe_set_data64(sqe, kIgnoreTag);
    if (reaping_) {
      wakes_queued_ = true;
      return true;
    }
    return submit_only();  // not taken: queued for the next poll, and the eventfd meanwhile
  }

  // Queues the operation (or, when `poll_phase`, a readiness poll for it) and parks until
  // its completion; returns the CQE result.
  int64_t submit_and_wait(const IoRequest& r, IoWait& w, bool poll_phase) {
    bump_owned(ops_);
    if (io_uring_sq_space_left(&ring_) < 2) enter_submit();
    io_uring_sqe* sqe = get_sqe();
    if (poll_phase) {
      Readiness rd = readiness_for(r);
      io_uring_prep_poll_add(sqe, rd.fd, static_cast<unsigned>(rd.events));
    } else {
      prep(sqe, r);
      // Straight to a bounded kernel worker: an inline try would allocate the pages for
      // the read (and reclaim for them, in a memory cgroup at its limit) on this thread.
      if (r.offload) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    }
    io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(&w));
    w.waiter.wait();
    return w.result;
  }

  static void prep(io_uring_sqe* sqe, const IoRequest& r) {
    switch (r.op) {
      case IoOpcode::accept:
        io_uring_prep_accept(sqe, r.fd, r.args.accept.addr, r.args.accept.addrlen,
                             r.args.accept.flags);
        break;
      case IoOpcode::connect:
        io_uring_prep_connect(sqe, r.fd, r.args.connect.addr, r.args.connect.addrlen);
        break;
      case IoOpcode::recv:
        io_uring_prep_recv(sqe, r.fd, r.args.socket.buf, r.args.socket.len,
                           r.args.socket.msg_flags);
        break;
      case IoOpcode::send:
        io_uring_prep_send(sqe, r.fd, r.args.socket.buf, r.args.socket.len,
                           r.args.socket.msg_flags);
        break;
      case IoOpcode::sendmsg:
        io_uring_prep_sendmsg(sqe, r.fd, r.args.message.msg,
                              static_cast<unsigned>(r.args.message.msg_flags));
        break;
      case IoOpcode::read:
        io_uring_prep_read(sqe, r.fd, r.args.file.buf,
                           static_cast<unsigned>(std::min<uint64_t>(r.args.file.len, UINT_MAX)),
                           static_cast<uint64_t>(r.args.file.offset));
        break;
      case IoOpcode::write:
        io_uring_prep_write(sqe, r.fd, r.args.file.buf,
                            static_cast<unsigned>(std::min<uint64_t>(r.args.file.len, UINT_MAX)),
                            static_cast<uint64_t>(r.args.file.offset));
        break;
      case IoOpcode::splice:
        io_uring_prep_splice(sqe, r.fd, r.args.splice.off_in, r.args.splice.fd_out,
                             r.args.splice.off_out,
                             static_cast<unsigned>(std::min<uint64_t>(r.args.splice.len, UINT_MAX)),
                             r.args.splice.flags);
        break;
      case IoOpcode::openat2: {
        // open_how is read at submission; the request outlives it (the fiber is parked).
        io_uring_prep_openat2(sqe, r.fd, r.args.open.path, const_cast<open_how*>(&r.args.open.how));
        break;
      }
      case IoOpcode::statx:
        io_uring_prep_statx(sqe, r.fd, r.args.stat.path, r.args.stat.flags, r.args.stat.mask,
                            r.args.stat.out);
        break;
      case IoOpcode::close:
        io_uring_prep_close(sqe, r.fd);
        break;
      case IoOpcode::poll:
        io_uring_prep_poll_add(sqe, r.fd, static_cast<unsigned>(r.args.poll.events));
        break;
      case IoOpcode::sendfile:
        break;  // handled synchronously
    }
  }

  // sendfile has no io_uring opcode: the copy itself does not block for cached files, so do
  // it here on the non-blocking socket and poll through the ring when the socket is full.
  int64_t do_sendfile(IoRequest& req) {
    const SendfileArgs& a = req.args.sendfile;
    off_t off = a.offset;
    while (true) {
      ssize_t n = ::sendfile(a.fd_out, req.fd, a.offset >= 0 ? &off : nullptr, a.len);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -errno;
      IoRequest p{.op = IoOpcode::poll,
                  .fd = a.fd_out,
                  .args = {.poll = {POLLOUT}},
                  .deadline = req.deadline,
                  .token = req.token};
      int64_t r = execute(p);
      if (r < 0) return r;
    }
  }

  void arm_wake() {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_read(sqe, wake_fd_, &wake_buf_, sizeof wake_buf_, 0);
    io_uring_sqe_set_data64(sqe, kWakeTag);
    wake_armed_ = true;
  }

  void flush_cancels() {
    for (IoWait* w = take_cancels(); w;) {
      IoWait* next = w->next_cancel;
      io_uring_sqe* sqe = get_sqe();
      io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(w), 0);
      io_uring_sqe_set_data64(sqe, kIgnoreTag);
      w = next;
    }
  }

  int reap() {
    io_uring_cqe* cqe;
    unsigned head;
    unsigned n = 0;
    reaping_ = true;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      uint64_t ud = cqe->user_data;
      if (ud == kWakeTag) {
        wake_armed_ = false;
      } else if (ud != kIgnoreTag && ud != kMsgWakeTag) {
        bump_owned(completions_);
        auto* w = reinterpret_cast<IoWait*>(ud);
        w->result = cqe->res;
        // Read after the CQE was seen (the loop loads the tail with acquire): whatever the
        // kernel did before posting it precedes every look with a later ticket.
        w->stamp = io_epoch();
        mark_completed(w);
        if (w->on_complete) {
          w->on_complete(w);  // a ReadyWait: starts its callback fiber
        } else {
          w->waiter.wake(false);
        }
      }
      ++n;
    }
    io_uring_cq_advance(&ring_, n);
    reaping_ = false;
    // Wake-ups of other processors queued by the walk (post_wake). Refused (-EBUSY), they
    // go with the next poll's enter, and meanwhile those processors nap or spin.
    if (wakes_queued_) {
      wakes_queued_ = false;
      submit_only();
    }
    if (!wake_armed_) arm_wake();
    return static_cast<int>(n);
  }

  IoOptions options_;
  io_uring ring_{};
  bool ready_ = false;
  int wake_fd_ = -1;
  uint64_t wake_buf_ = 0;
  bool wake_armed_ = false;
  bool reaping_ = false;       // reap() is walking the completion queue
  bool wakes_queued_ = false;  // post_wake() queued MSG_RING wake-ups during that walk
};

}  // namespace

std::unique_ptr<IoDriver> make_io_uring_driver(const IoOptions& options) {
  return std::make_unique<IoUringDriver>(options);
}

}  // namespace weft::rt
