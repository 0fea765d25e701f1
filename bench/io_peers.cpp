#include "bench/io_peers.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <boost/asio.hpp>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/fiber.hpp"
#include "runtime/io.hpp"
#include "runtime/io_driver_internal.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/waiter.hpp"

namespace weft::bench {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr std::size_t kEchoBuffer = 1024;  // what one server recv may take

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void fail(const char* what, int64_t err) {
  std::fprintf(stderr, "io_bench: %s: %s\n", what,
               std::strerror(static_cast<int>(err < 0 ? -err : err)));
  std::fflush(stderr);
  _exit(3);
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// Sets the round-trip figures from per-round-trip nanoseconds.
void set_rtt(std::vector<int64_t> ns, Figures& out) {
  if (ns.empty()) return;
  double sum = 0;
  for (int64_t v : ns) sum += static_cast<double>(v);
  std::sort(ns.begin(), ns.end());
  auto pct = [&](double q) {
    return static_cast<double>(ns[static_cast<std::size_t>(q * (ns.size() - 1))]) / 1000;
  };
  out.set("rtt_mean_us", sum / static_cast<double>(ns.size()) / 1000);
  out.set("rtt_p50_us", pct(0.5));
  out.set("rtt_p99_us", pct(0.99));
}

rt::RuntimeOptions one_processor(rt::IoBackendKind kind, unsigned spin = kDefaultSpin) {
  rt::IoOptions io;
  io.backend = kind;
  rt::RuntimeOptions o;
  o.processors = 1;
  o.spin = spin;
  o.make_driver = rt::make_io_driver_factory(io);
  return o;
}

rt::IoStats sum_stats(rt::Runtime& runtime) {
  rt::IoStats s;
  for (unsigned i = 0; i < runtime.processors(); ++i) {
    rt::IoDriver* d = runtime.processor(i).io_driver();
    if (!d) continue;
    rt::IoStats p = d->stats();
    s.enters += p.enters;
    s.operations += p.operations;
    s.completions += p.completions;
  }
  return s;
}

// Fiber: receives exactly len bytes; returns false at end of stream or on an error.
bool weft_recv_all(int fd, char* buf, std::size_t len) {
  std::size_t got = 0;
  while (got < len) {
    int64_t n = rt::io::recv(fd, buf + got, len - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// Fiber: a connected, non-blocking TCP socket to 127.0.0.1:port (exits the process on failure).
int weft_connect(uint16_t port) {
  int fd = rt::io::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("socket", fd);
  sockaddr_in a = loopback(port);
  int rc = rt::io::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc < 0) fail("connect", rc);
  set_nodelay(fd);
  return fd;
}

// ---------------------------------------------------------------------------------------
// Servers

void serve_weft(rt::IoBackendKind kind, int lfd, const ServeOptions& o, Figures& out) {
  rt::Runtime runtime(one_processor(kind, o.spin));
  std::optional<WindowSampler> sampler;
  if (o.window) {
    sampler.emplace(*o.window, o.counter, [&runtime] { return sum_stats(runtime); });
    sampler->start();
  }
  runtime.run([&] {
    std::vector<rt::FiberHandle> conns;
    for (unsigned i = 0; i < o.conns; ++i) {
      int fd = rt::io::accept(lfd, nullptr, nullptr);
      if (fd < 0) fail("accept", fd);
      set_nodelay(fd);
      conns.push_back(rt::spawn([fd] {
        char buf[kEchoBuffer];
        while (true) {
          int64_t n = rt::io::recv(fd, buf, sizeof buf);
          if (n <= 0 || rt::io::send_all(fd, buf, static_cast<std::size_t>(n)) < 0) break;
        }
        rt::io::close(fd);
      }));
    }
    for (auto& c : conns) c.join();
  });
  ::close(lfd);
  if (sampler) sampler->finish(out);
}

class AsioSession : public std::enable_shared_from_this<AsioSession> {
 public:
  explicit AsioSession(tcp::socket s) : socket_(std::move(s)) {}

  void read() {
    socket_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](
                                                    boost::system::error_code ec, std::size_t n) {
      if (!ec) self->write(n);
    });
  }

 private:
  void write(std::size_t n) {
    asio::async_write(socket_, asio::buffer(buf_, n),
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        if (!ec) self->read();
                      });
  }

  tcp::socket socket_;
  char buf_[kEchoBuffer];
};

void serve_asio(int lfd, const ServeOptions& o, Figures& out) {
  asio::io_context ctx(1);
  tcp::acceptor acceptor(ctx);
  acceptor.assign(tcp::v4(), lfd);
  std::optional<WindowSampler> sampler;
  if (o.window) {
    sampler.emplace(*o.window, o.counter, nullptr);
    sampler->start();
  }
  unsigned accepted = 0;
  std::function<void()> accept_next = [&] {
    acceptor.async_accept([&](boost::system::error_code ec, tcp::socket s) {
      if (ec) fail("accept", ec.value());
      s.set_option(tcp::no_delay(true));
      std::make_shared<AsioSession>(std::move(s))->read();
      if (++accepted < o.conns) {
        accept_next();
      } else {
        acceptor.close();
      }
    });
  };
  accept_next();
  ctx.run();  // until every session has ended
  if (sampler) sampler->finish(out);
}

void* echo_thread(void* arg) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  char buf[kEchoBuffer];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    ssize_t sent = 0;
    while (sent < n) {
      ssize_t m = ::send(fd, buf + sent, static_cast<std::size_t>(n - sent), MSG_NOSIGNAL);
      if (m <= 0) break;
      sent += m;
    }
    if (sent < n) break;
  }
  ::close(fd);
  return nullptr;
}

void serve_threads(int lfd, const ServeOptions& o, Figures& out) {
  fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) & ~O_NONBLOCK);
  std::optional<WindowSampler> sampler;
  if (o.window) {
    sampler.emplace(*o.window, o.counter, nullptr);
    sampler->start();
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  std::vector<pthread_t> threads;
  for (unsigned i = 0; i < o.conns; ++i) {
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) fail("accept", errno);
    set_nodelay(fd);
    pthread_t t;
    int rc = pthread_create(&t, &attr, echo_thread, reinterpret_cast<void*>(intptr_t{fd}));
    if (rc != 0) fail("pthread_create", rc);
    threads.push_back(t);
  }
  pthread_attr_destroy(&attr);
  ::close(lfd);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  if (sampler) sampler->finish(out);
}

// ---------------------------------------------------------------------------------------
// Ping-pong clients

void ping_weft(rt::IoBackendKind kind, uint16_t port, std::size_t size, unsigned warmup, unsigned n,
               unsigned spin, Figures& out) {
  std::vector<int64_t> ns(n);
  rt::Runtime runtime(one_processor(kind, spin));
  runtime.run([&] {
    int fd = weft_connect(port);
    std::vector<char> msg(size, 'x'), in(size);
    for (unsigned i = 0; i < warmup + n; ++i) {
      int64_t t0 = now_ns();
      int64_t s = rt::io::send_all(fd, msg.data(), size);
      if (s < 0) fail("send", s);
      if (!weft_recv_all(fd, in.data(), size)) fail("recv", EPIPE);
      if (i >= warmup) ns[i - warmup] = now_ns() - t0;
    }
    rt::io::close(fd);
  });
  set_rtt(std::move(ns), out);
}

void ping_asio(uint16_t port, std::size_t size, unsigned warmup, unsigned n, Figures& out) {
  std::vector<int64_t> ns(n);
  asio::io_context ctx(1);
  tcp::socket s(ctx);
  s.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port));
  s.set_option(tcp::no_delay(true));
  std::vector<char> msg(size, 'x'), in(size);
  unsigned i = 0;
  int64_t t0 = 0;
  std::function<void()> round = [&] {
    t0 = now_ns();
    asio::async_write(s, asio::buffer(msg), [&](boost::system::error_code ec, std::size_t) {
      if (ec) fail("send", ec.value());
      asio::async_read(s, asio::buffer(in), [&](boost::system::error_code ec2, std::size_t) {
        if (ec2) fail("recv", ec2.value());
        if (i >= warmup) ns[i - warmup] = now_ns() - t0;
        if (++i < warmup + n) round();
      });
    });
  };
  round();
  ctx.run();
  s.close();
  set_rtt(std::move(ns), out);
}

void ping_threads(uint16_t port, std::size_t size, unsigned warmup, unsigned n, Figures& out) {
  std::vector<int64_t> ns(n);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    fail("connect", errno);
  }
  set_nodelay(fd);
  std::vector<char> msg(size, 'x'), in(size);
  for (unsigned i = 0; i < warmup + n; ++i) {
    int64_t t0 = now_ns();
    if (::send(fd, msg.data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) {
      fail("send", errno);
    }
    if (::recv(fd, in.data(), size, MSG_WAITALL) != static_cast<ssize_t>(size)) {
      fail("recv", errno);
    }
    if (i >= warmup) ns[i - warmup] = now_ns() - t0;
  }
  ::close(fd);
  set_rtt(std::move(ns), out);
}

// Returns the scheduler state letter of thread `tid` of this process ('S': asleep), or 0.
char thread_state(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string s;
  std::getline(f, s);
  std::size_t p = s.rfind(')');
  return p != std::string::npos && p + 2 < s.size() ? s[p + 2] : 0;
}

double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

uint64_t xorshift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

}  // namespace

const char* stack_name(Stack s) {
  switch (s) {
    case Stack::weft_uring:
      return "weft io_uring";
    case Stack::weft_epoll:
      return "weft epoll";
    case Stack::asio:
      return "Boost.Asio";
    case Stack::threads:
      return "threads";
  }
  return "?";
}

int make_listener(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4096) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

void serve_echo(Stack s, int listen_fd, const ServeOptions& o, Figures& out) {
  switch (s) {
    case Stack::weft_uring:
      return serve_weft(rt::IoBackendKind::io_uring, listen_fd, o, out);
    case Stack::weft_epoll:
      return serve_weft(rt::IoBackendKind::epoll, listen_fd, o, out);
    case Stack::asio:
      return serve_asio(listen_fd, o, out);
    case Stack::threads:
      return serve_threads(listen_fd, o, out);
  }
}

void ping_pong(Stack s, uint16_t port, std::size_t msg_size, unsigned warmup, unsigned round_trips,
               unsigned spin, Figures& out) {
  switch (s) {
    case Stack::weft_uring:
      return ping_weft(rt::IoBackendKind::io_uring, port, msg_size, warmup, round_trips, spin, out);
    case Stack::weft_epoll:
      return ping_weft(rt::IoBackendKind::epoll, port, msg_size, warmup, round_trips, spin, out);
    case Stack::asio:
      return ping_asio(port, msg_size, warmup, round_trips, out);
    case Stack::threads:
      return ping_threads(port, msg_size, warmup, round_trips, out);
  }
}

void echo_load(uint16_t port, const LoadOptions& o, const WindowPipes& window, Figures& out) {
  rt::Runtime runtime(one_processor(rt::IoBackendKind::io_uring));
  uint64_t msgs = 0;
  double window_s = 0, cli_cpu_s = 0;
  runtime.run([&] {
    std::vector<int> fds;
    for (unsigned i = 0; i < o.conns; ++i) fds.push_back(weft_connect(port));
    std::atomic<uint64_t> count{0};
    std::atomic<bool> stop{false};
    std::vector<rt::FiberHandle> workers;
    for (int fd : fds) {
      workers.push_back(rt::spawn([&, fd] {
        std::vector<char> msg(o.msg_size, 'x'), in(o.msg_size);
        while (!stop.load(std::memory_order_relaxed)) {
          int64_t s = rt::io::send_all(fd, msg.data(), msg.size());
          if (s < 0) fail("send", s);
          if (!weft_recv_all(fd, in.data(), in.size())) fail("recv", EPIPE);
          count.fetch_add(1, std::memory_order_relaxed);
        }
        rt::io::close(fd);
      }));
    }
    auto reply = [](int fd) {
      char c;
      return rt::io::read(fd, &c, 1) == 1;
    };
    rt::sleep_for(
        std::chrono::duration_cast<rt::Duration>(std::chrono::duration<double>(o.warmup_s)));
    if (!window_mark(window, 'S', reply)) fail("window start", EPIPE);
    uint64_t c0 = count.load(std::memory_order_relaxed);
    auto t0 = std::chrono::steady_clock::now();
    double cpu0 = process_cpu_s();
    rt::sleep_for(
        std::chrono::duration_cast<rt::Duration>(std::chrono::duration<double>(o.window_s)));
    uint64_t c1 = count.load(std::memory_order_relaxed);
    window_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cli_cpu_s = process_cpu_s() - cpu0;
    if (!window_mark(window, 'E', reply)) fail("window end", EPIPE);
    stop.store(true, std::memory_order_relaxed);
    for (auto& w : workers) w.join();
    msgs = c1 - c0;
  });
  out.set("msgs", static_cast<double>(msgs));
  out.set("window_s", window_s);
  out.set("msgs_per_s", static_cast<double>(msgs) / window_s);
  out.set("cli_cpu_s", cli_cpu_s);
}

void idle_spin(Stack s, unsigned spin, unsigned periods, Figures& out) {
  auto kind = s == Stack::weft_epoll ? rt::IoBackendKind::epoll : rt::IoBackendKind::io_uring;
  rt::Runtime runtime(one_processor(kind, spin));
  double cpu = 0;
  runtime.run([&] {
    double c0 = process_cpu_s();
    for (unsigned i = 0; i < periods; ++i) rt::sleep_for(std::chrono::microseconds(500));
    cpu = process_cpu_s() - c0;
  });
  out.set("cpu_us_per_idle", cpu / periods * 1e6);
}

// Two pinned io_uring processors woken by `wake`.
static rt::RuntimeOptions two_pinned_processors(rt::WakeMethod wake) {
  rt::IoOptions io;
  io.backend = rt::IoBackendKind::io_uring;
  io.wake = wake;
  rt::RuntimeOptions o;
  o.processors = 2;
  o.pin = true;
  o.make_driver = rt::make_io_driver_factory(io);
  return o;
}

// Returns whether thread `tid` is asleep in the kernel, waiting up to 100 ms for it (a
// thread not known yet, or the caller's own, counts as asleep).
static bool wait_until_asleep(int tid, int self) {
  bool asleep = tid == 0 || tid == self;
  for (int64_t limit = now_ns() + 100'000'000; !asleep && now_ns() < limit;) {
    asleep = thread_state(tid) == 'S';
  }
  return asleep;
}

// Reads each of the two processors' io_uring_enter count into per_processor.
static void io_enters(rt::Runtime& runtime, uint64_t* per_processor) {
  for (unsigned p = 0; p < 2; ++p) {
    per_processor[p] = runtime.processor(p).io_driver()->stats().enters;
  }
}

// Returns the q-quantile of v (0 when empty).
static double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * (v.size() - 1))];
}

void wake_latency(rt::WakeMethod wake, unsigned samples, unsigned gap_us, Figures& out) {
  constexpr unsigned kWarmup = 10;
  rt::Runtime runtime(two_pinned_processors(wake));
  std::vector<double> lat_us, cost_ns;
  unsigned stalls = 0, awake = 0;
  uint64_t before[2] = {}, after[2] = {};  // io_uring_enter calls per processor
  unsigned waker_index = 0;
  auto enters = [&runtime](uint64_t* per) { io_enters(runtime, per); };
  runtime.run([&] {
    unsigned total = samples + kWarmup;
    std::atomic<rt::Waiter*> slot{nullptr};
    std::atomic<int64_t> ran_at{0};
    std::atomic<int> ran_tid{0};
    std::atomic<unsigned> ran{0};
    rt::FiberHandle target = rt::spawn([&] {
      for (unsigned i = 0; i < total; ++i) {
        rt::Waiter w;
        slot.store(&w, std::memory_order_release);
        w.wait();
        ran_at.store(now_ns(), std::memory_order_relaxed);
        ran_tid.store(static_cast<int>(gettid()), std::memory_order_relaxed);
        ran.store(i + 1, std::memory_order_release);
      }
    });
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < total; ++i) {
      if (i == kWarmup) enters(before);
      // A gap (busy, polling this processor's ring now and then), then wait for the
      // target's next wait and for its processor's thread to be asleep in the kernel.
      int64_t until =
          now_ns() + int64_t{gap_us} * 500 + int64_t(xorshift(rng) % (gap_us + 1)) * 1000;
      while (now_ns() < until) rt::yield();
      rt::Waiter* w;
      while (!(w = slot.exchange(nullptr, std::memory_order_acq_rel))) rt::yield();
      int self = static_cast<int>(gettid());
      bool asleep = wait_until_asleep(ran_tid.load(std::memory_order_relaxed), self);
      int64_t t0 = now_ns();
      w->wake(false);
      int64_t t1 = now_ns();
      // Stay busy (never yield) so that the target's own processor has to run it; after a
      // second give up and let this processor run it.
      for (int64_t limit = t1 + 1'000'000'000; ran.load(std::memory_order_acquire) != i + 1;) {
        if (now_ns() > limit) rt::yield();
      }
      if (i < kWarmup) continue;
      if (ran_tid.load(std::memory_order_relaxed) == self) {
        ++stalls;  // this processor ran it after the one-second limit
        continue;
      }
      if (!asleep) ++awake;
      lat_us.push_back(static_cast<double>(ran_at.load(std::memory_order_relaxed) - t0) / 1000);
      cost_ns.push_back(static_cast<double>(t1 - t0));
    }
    enters(after);
    waker_index = rt::Processor::current()->index();
    target.join();
  });
  out.set("wake_p50_us", quantile(lat_us, 0.5));
  out.set("wake_p99_us", quantile(lat_us, 0.99));
  out.set("waker_ns", quantile(cost_ns, 0.5));
  double n = std::max(1u, samples);
  unsigned w = waker_index, t = 1 - waker_index;
  out.set("waker_enters_per_wake", static_cast<double>(after[w] - before[w]) / n);
  out.set("target_enters_per_wake", static_cast<double>(after[t] - before[t]) / n);
  out.set("stalls", stalls);
  out.set("not_asleep", awake);
}

}  // namespace weft::bench
